"""A test run's own world: its Prefect, MLflow, cache and config folders in a temporary folder of
the run (never the user's), and a reaper that ends the run's processes when the run is over,
also when pytest or the make above it is killed with SIGKILL.

Imported first by tests/conftest.py, so that the variables are set before anything imports
prefect or mlflow (they read their settings once), and a pytest plugin for the reaper's start
and stop (``-p _testrun`` outside this tree).

The pytest that runs the session (not an xdist worker) gives the run an id, appends it to
``ATTNLAB_TEST_RUN`` (a run started by a test of another run keeps the outer ids, so the outer
run's reaper ends its processes too) and makes the folder ``ATTNLAB_TEST_ROOT``. Every process
started afterwards inherits both: xdist workers take a subfolder each of the same folder, and
the reaper (``_reaper.py``) ends every process whose environment names the run.
"""

from __future__ import annotations

import atexit
import getpass
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from attnlab.ops.collector import collect_less_often

RUN_VARIABLE = "ATTNLAB_TEST_RUN"
ROOT_VARIABLE = "ATTNLAB_TEST_ROOT"
#: The pid of the run's pytest, by which its xdist workers tell themselves from a pytest that a
#: test started (which inherits PYTEST_XDIST_WORKER from the worker that runs the test).
PYTEST_VARIABLE = "ATTNLAB_TEST_PYTEST"
#: Where each program looks for its home, state and settings, under the process's subfolder.
FOLDERS = {
    "HOME": "home",
    "XDG_CACHE_HOME": "home/.cache",
    "XDG_CONFIG_HOME": "home/.config",
    "XDG_DATA_HOME": "home/.local/share",
    "XDG_STATE_HOME": "home/.local/state",
    "PREFECT_HOME": "prefect",
    "ATTNLAB_MLFLOW_DIR": "mlflow",
    "ATTNLAB_CACHE_DIR": "cache",
    "MPLCONFIGDIR": "matplotlib",
    # Scratch folders too: a run that a fault test kills with SIGKILL cannot remove its own.
    "TMPDIR": "tmp",
}
#: Threads that wait for work sleep instead of spinning (OpenMP's passive policy, read when torch
#: loads): the run's xdist workers and the commands they start each take torch's default of one
#: thread per core, and on 2 cores their spinning threads slowed a 1 s training test to 30 s.
#: The threads and the results are the same; only idle waiting stops burning the cores.
#: torch.compile's tests compile in the process itself, as inductor's pool of compile workers
#: (one interpreter per core, each importing torch) cost them 10 CPU-s on 2 cores: the same
#: kernels, without the pool.
THREAD_SETTINGS = {"OMP_WAIT_POLICY": "PASSIVE", "TORCHINDUCTOR_COMPILE_THREADS": "1"}
#: The user's Prefect and MLflow settings (a server, a profile, a database, a tracking URI)
#: would send the tests' runs there: the tests run without them.
DROPPED_PREFIXES = ("PREFECT_", "MLFLOW_")

_inherited = dict(os.environ)
_reaper: subprocess.Popen | None = None


def default_inductor_cache() -> str:
    """Where torch.compile keeps its kernels by default, before TMPDIR moves: the rule of
    torch._inductor.runtime.cache_dir_utils.default_cache_dir (importing it costs 3 CPU-s)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid_{os.getuid()}"
    return os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


def is_worker() -> bool:
    """Whether this process is an xdist worker of a run (its parent is the run's pytest)."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER")) and os.environ.get(PYTEST_VARIABLE) == str(os.getppid())


def isolate() -> Path:
    """Point every home of this process into the run's folder; the process's subfolder."""
    if is_worker():
        own = Path(os.environ[ROOT_VARIABLE]) / os.environ["PYTEST_XDIST_WORKER"]
    else:
        root = Path(tempfile.mkdtemp(prefix="attnlab-tests-"))
        atexit.register(shutil.rmtree, root, True)
        os.environ[RUN_VARIABLE] = " ".join([*os.environ.get(RUN_VARIABLE, "").split(), uuid.uuid4().hex])
        os.environ[ROOT_VARIABLE] = str(root)
        os.environ[PYTEST_VARIABLE] = str(os.getpid())
        own = root / "main"
    for name in [name for name in os.environ if name.startswith(DROPPED_PREFIXES)]:
        del os.environ[name]
    # torch.compile's kernel cache (keyed by content, shared with the user's own runs) stays where
    # torch keeps it, out of TMPDIR's move: in the run's folder every run would compile from cold
    # (the compiled-loop tests: 71 CPU-s cold, 28 warm).
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", default_inductor_cache())
    for name, folder in FOLDERS.items():
        os.environ[name] = str(own / folder)
    os.environ.update(THREAD_SETTINGS)
    (own / FOLDERS["HOME"]).mkdir(parents=True, exist_ok=True)
    (own / FOLDERS["TMPDIR"]).mkdir(exist_ok=True)
    tempfile.tempdir = None  # found again from TMPDIR at its next use
    return own


def run_id() -> str:
    """This run's id (the innermost in ATTNLAB_TEST_RUN)."""
    return os.environ[RUN_VARIABLE].split()[-1]


def start_reaper() -> subprocess.Popen:
    """The reaper of this run, in a session of its own; its stdin is the pipe that stops it."""
    reaper = Path(__file__).with_name("_reaper.py")
    command = [sys.executable, str(reaper), "--pytest", str(os.getpid()), "--run", run_id(), "--folder", os.environ[ROOT_VARIABLE]]
    # Its environment is the one pytest was given: it is not a process of this run.
    return subprocess.Popen(command, stdin=subprocess.PIPE, env=_inherited, start_new_session=True)


def stop_reaper(reaper: subprocess.Popen) -> None:
    """Tell the reaper the run ended; it ends what the run left running, then exits."""
    try:
        reaper.stdin.write(b"done\n")  # type: ignore[union-attr]
        reaper.stdin.close()  # type: ignore[union-attr]
    except OSError:
        pass  # it died: nothing to stop
    reaper.wait(timeout=120)  # a hang guard: it takes well under a second


def pytest_configure(config: pytest.Config) -> None:
    global _reaper
    if not is_worker() and _reaper is None:
        _reaper = start_reaper()


def stop_multiprocessing_helpers() -> None:
    """Stop the helper processes multiprocessing started for this process (the forkserver that a
    sweep's workers are forked from, the resource tracker): they end when this process exits,
    after the run's reaper has looked for what the tests left running."""
    from multiprocessing import forkserver, resource_tracker

    forkserver._forkserver._stop()  # type: ignore[attr-defined]
    resource_tracker._resource_tracker._stop()  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    global _reaper
    stop_multiprocessing_helpers()
    if not is_worker():
        import _session_prefect

        _session_prefect.stop()
    if _reaper is not None:
        stop_reaper(_reaper)
        _reaper = None


isolate()
# The pace of garbage collection of the commands attnlab starts, before torch, Prefect and MLflow
# are imported: at Python's default pace 12% of a flow test file's CPU went to collections.
collect_less_often()
