"""A test run never touches the user's homes: HOME, Prefect's home, the MLflow store, attnlab's
cache and matplotlib's settings resolve into the run's temporary folder (_testrun.py), in the
tests and in the commands they start."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
ROOT = Path(os.environ["ATTNLAB_TEST_ROOT"])
ATTNLAB = str(Path(sys.executable).with_name("attnlab"))


def homes() -> dict[str, str]:
    """Where each program of this process keeps its state, as the program resolves it."""
    import matplotlib
    from prefect.settings import get_current_settings

    import attnlab.flows  # noqa: F401  (as every attnlab command starts)
    from attnlab.data.cache import cache_root
    from attnlab.flows.tracking.store import resolve_store

    return {
        "HOME": str(Path.home()),
        "Prefect's home": str(get_current_settings().home),
        "the MLflow store": str(resolve_store().folder),
        "attnlab's cache": str(cache_root()),
        "matplotlib's settings": matplotlib.get_configdir(),
        "scratch folders": tempfile.gettempdir(),
    }


def outside_the_run(homes: dict[str, str]) -> dict[str, str]:
    """The homes outside the run's folder and pytest's temporary folders (a module fixture of
    the flow tests may leave its store in MLFLOW_TRACKING_URI for the rest of its worker)."""
    temporary = (ROOT.resolve(), Path(tempfile.gettempdir(), f"pytest-of-{getpass.getuser()}").resolve())
    return {name: path for name, path in homes.items() if not any(Path(path).resolve().is_relative_to(t) for t in temporary)}


def test_the_run_folder_is_a_fresh_temporary_folder():
    assert ROOT.name.startswith("attnlab-tests-") and Path(tempfile.gettempdir()).is_relative_to(ROOT)


def test_the_homes_of_a_test_are_in_the_run_folder():
    assert outside_the_run(homes()) == {}


@pytest.mark.slow
def test_the_homes_of_a_command_a_test_starts_are_in_the_run_folder(tmp_path):
    script = f"import json, sys; sys.path.insert(0, {str(TESTS)!r}); from test_isolation import homes; print(json.dumps(homes()))"
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert outside_the_run(json.loads(done.stdout)) == {}


@pytest.mark.slow
def test_attnlab_started_by_a_test_looks_for_its_store_in_the_run_folder(tmp_path):
    store = Path(os.environ["ATTNLAB_MLFLOW_DIR"])
    assert outside_the_run({"the MLflow store": str(store)}) == {}
    done = subprocess.run([ATTNLAB, "runs", "--json"], cwd=tmp_path, capture_output=True, text=True, check=False)
    if not (store / "mlflow.db").exists():
        assert (done.returncode, done.stdout) == (2, ""), done.stderr[-3000:]
        assert f"no MLflow store at {store} yet" in done.stderr  # its answer for a folder with no store
        return
    # an earlier test of this worker logged to the worker's store: attnlab lists that store
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["tracking_uri"] == f"sqlite:///{store / 'mlflow.db'}"
