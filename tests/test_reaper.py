"""A killed test run leaves no process behind: 20 s after ``kill -9`` of the make that runs a
pytest (make alone, or make's whole process group with pytest and its xdist worker), no process
of that run is left: not its servers in sessions of their own, nor their children that cleared
their environment. A real make runs a real pytest (one xdist worker, the reaper of _testrun.py)
on a generated test that starts such processes and says when they run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

TESTS = Path(__file__).parent
#: The one deadline: how long after the kill the run's processes may still be there.
GRACE_SECONDS = 20

INNER_TEST = """
import json, os, subprocess, sys
from pathlib import Path

FOLDER = Path(os.environ["REAPED_RUN_FOLDER"])
SLEEPER = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(3600)", str(FOLDER)]


def test_starts_processes_and_waits():
    children = [
        subprocess.Popen(SLEEPER, stdout=subprocess.PIPE),
        # A server in a session of its own: out of reach of a kill of pytest's process group.
        subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(FOLDER)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True),
        # A process group whose member cleared its environment: only its group names the run.
        subprocess.Popen(["sh", "-c", 'env -i "$0" "$@" & wait', *SLEEPER], stdout=subprocess.PIPE, start_new_session=True),
    ]
    for child in children:
        assert child.stdout.readline()  # it runs
    ready = FOLDER / "ready.json"
    ready.with_suffix(".part").write_text(json.dumps({"run": os.environ["ATTNLAB_TEST_RUN"].split()[-1]}))
    ready.with_suffix(".part").rename(ready)
    for child in children:
        child.wait()
"""


def inner_run(folder: Path) -> subprocess.Popen:
    """``make`` in a session of its own running pytest on :data:`INNER_TEST` in ``folder``."""
    (folder / "test_inner.py").write_text(INNER_TEST)
    pytest_command = f"{sys.executable} -m pytest -p _testrun -p no:cacheprovider -n 1 -q {folder / 'test_inner.py'}"
    (folder / "Makefile").write_text(f"test:\n\tPYTHONUNBUFFERED=1 {pytest_command}\n")
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update(PYTHONPATH=str(TESTS), REAPED_RUN_FOLDER=str(folder))
    with (folder / "make.log").open("w") as log:
        return subprocess.Popen(["make", "-C", str(folder), "test"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_until_ready(make: subprocess.Popen, folder: Path) -> str:
    """The inner run's id, once its processes run; fails if make ends first."""
    ready = folder / "ready.json"
    while not ready.exists():
        if make.poll() is not None:
            pytest.fail(f"the inner run ended (exit {make.returncode}) before its processes ran:\n{(folder / 'make.log').read_text()}")
        time.sleep(0.05)
    return json.loads(ready.read_text())["run"]


def left_of(run: str, folder: Path) -> list[psutil.Process]:
    """Live processes of the inner run: its id (once known) in their environment or command
    line, or its folder in their command line."""
    found = []
    for process in psutil.process_iter():
        try:
            if run and run in process.environ().get("ATTNLAB_TEST_RUN", "").split():
                found.append(process)
                continue
            command = " ".join(process.cmdline())
        except psutil.Error:
            continue  # gone, a zombie, or not ours to read
        if (run and run in command) or str(folder) in command:
            found.append(process)
    return found


def end(processes: list[psutil.Process]) -> None:
    """SIGKILL for each process, and for the process group it leads."""
    for process in processes:
        try:
            if os.getpgid(process.pid) == process.pid:
                os.killpg(process.pid, signal.SIGKILL)
            process.kill()
        except (OSError, psutil.Error):
            pass


def describe(processes: list[psutil.Process]) -> list[str]:
    lines = []
    for process in processes:
        try:
            lines.append(f"{process.pid} {' '.join(process.cmdline())[:160]}")
        except psutil.Error:
            pass
    return lines


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("make") is None, reason="the test runs make, as `make test` does")
@pytest.mark.parametrize("victims", ["make", "make's process group"])
def test_no_process_of_a_run_is_left_20_s_after_kill_9_of_its_make(tmp_path, victims):
    folder = tmp_path / "run"
    folder.mkdir()
    make = inner_run(folder)
    run = ""
    try:
        run = wait_until_ready(make, folder)
        if victims == "make":
            os.kill(make.pid, signal.SIGKILL)  # the shell of its recipe, pytest and its worker run on
        else:
            os.killpg(make.pid, signal.SIGKILL)  # make, that shell, pytest and its worker
        make.wait()
        deadline = time.monotonic() + GRACE_SECONDS
        while (left := left_of(run, folder)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert describe(left) == [], (folder / "make.log").read_text()
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
        end(left_of(run, folder))  # what a failed test would leave
