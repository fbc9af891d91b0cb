"""Fixtures of the flow and CLI tests: one Prefect test harness per session (per xdist worker),
throw-away MLflow stores, and a store with a trained model shared by the run, all its xdist
workers included (helpers: _flowkit.py). Every test here is marked ``flows``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from _flowkit import LEARNS, chromium, point_at, run_flow
from filelock import FileLock

import attnlab.flows  # noqa: F401  (telemetry defaults before prefect and mlflow are imported)


@pytest.fixture(scope="session", autouse=True)
def prefect_harness(tmp_path_factory):
    """A temporary Prefect server and database for the whole session; task results and the
    generated datasets go to temporary folders. The commands the tests start use it too
    (``PREFECT_API_URL``) rather than each starting a temporary server of its own, 12 CPU-s per
    command; the tests of that temporary server remove the variable."""
    from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, get_current_settings, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    storage = tmp_path_factory.mktemp("prefect-storage")
    with temporary_settings(updates={PREFECT_LOCAL_STORAGE_PATH: storage}), prefect_test_harness(server_startup_timeout=600):
        os.environ["PREFECT_API_URL"] = str(get_current_settings().api.url)
        try:
            yield
        finally:
            os.environ.pop("PREFECT_API_URL", None)


@pytest.fixture
def empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh embedded store folder (nothing created yet)."""
    return point_at(tmp_path / "mlflow", monkeypatch)


@pytest.fixture(scope="session")
def learned_store(tmp_path_factory, worker_id, prefect_harness) -> tuple[Path, dict]:
    """A store holding one run of a model that learned the date task; (folder, summary). Its
    tests only read it. Trained once per run: the first xdist worker to need it trains it under
    a file lock in the folder the workers share, the others wait for it and read its summary."""
    base = tmp_path_factory.getbasetemp()
    shared = (base if worker_id == "master" else base.parent) / "learned"
    folder, summary_file = shared / "mlflow", shared / "summary.json"
    with FileLock(f"{shared}.lock"):
        if not summary_file.is_file():
            summary_file.parent.mkdir(exist_ok=True)
            summary = run_flow(folder, **LEARNS)
            summary_file.write_text(json.dumps(summary))
    return folder, json.loads(summary_file.read_text())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test of this folder ``flows``: `make test-fast` leaves them out."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.flows)


@pytest.fixture(autouse=True)
def _restore_environment():
    """The CLI runs in-process here, and a real CLI process sets variables for itself and its
    children (log levels, PYTHONWARNINGS, PREFECT_API_URL for workers): undo them after each
    test, so no test sees another's."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def browser():
    """:func:`chromium` for a whole module of browser tests."""
    with chromium() as browser:
        yield browser
