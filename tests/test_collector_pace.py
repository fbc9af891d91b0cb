"""The processes attnlab starts itself collect garbage at attnlab's pace (attnlab.ops.collector):
the ``attnlab`` command, the server child it runs Prefect's temporary server in, and the workers of
a sweep or a tune. A Python program that imports attnlab keeps its own pace."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

from attnlab.ops.collector import THRESHOLDS, collect_less_often

PRINT_PACE = "import gc; print(*gc.get_threshold(), sep=',')"
PYTHONS_PACE = (700, 10, 10)


def pace(output: str) -> tuple[int, ...]:
    return tuple(int(value) for value in output.strip().splitlines()[-1].split(","))


def run_python(*args: str, **env: str) -> str:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_collect_less_often_sets_the_thresholds():
    saved = gc.get_threshold()
    try:
        gc.set_threshold(*PYTHONS_PACE)
        collect_less_often()
        assert gc.get_threshold() == THRESHOLDS
    finally:
        gc.set_threshold(*saved)
    assert THRESHOLDS[0] > PYTHONS_PACE[0]  # fewer young collections than Python's default


def test_the_attnlab_command_runs_at_attnlabs_pace_and_an_importer_at_its_own():
    # The command's entry point, its commands replaced by one that prints the pace.
    entry = "import gc\nfrom attnlab.flows.cli import app\napp.main = lambda argv=None: print(*gc.get_threshold(), sep=',') or 0\napp.run()"
    assert pace(run_python("-c", entry)) == THRESHOLDS
    assert pace(run_python("-c", f"import attnlab.flows.cli.app; {PRINT_PACE}")) == PYTHONS_PACE


def test_the_server_child_runs_its_server_at_attnlabs_pace(tmp_path: Path):
    (tmp_path / "pace_server.py").write_text(PRINT_PACE + "\n")
    out = run_python("-m", "attnlab.flows.services.server_child", str(os.getpid()), "pace_server", PYTHONPATH=str(tmp_path))
    assert pace(out) == THRESHOLDS


def test_a_sweeps_workers_are_set_to_attnlabs_pace_also_when_prefect_copies_the_runner():
    from attnlab.flows.sweep.worker_pool import SeparateWorkersTaskRunner, start_worker

    runner = SeparateWorkersTaskRunner(max_workers=2)
    for each in (runner, runner.duplicate()):
        assert each._initializer is start_worker and each._max_workers == 2
    started = (
        "import gc, signal\nfrom attnlab.flows.sweep import worker_pool\nworker_pool.start_worker()\n"
        "assert signal.getsignal(signal.SIGINT) is worker_pool._on_interrupt\nprint(*gc.get_threshold(), sep=',')"
    )  # and a Ctrl-C handled as test_worker_interrupts.py tests
    assert pace(run_python("-c", started)) == THRESHOLDS
