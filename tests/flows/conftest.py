"""Fixtures of the flow and CLI tests: one temporary Prefect server for the run (all its xdist
workers), throw-away MLflow stores, and a store with a trained model shared by the run, all its
xdist workers included (helpers: _flowkit.py). Every test here is marked ``flows``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import _session_prefect
import pytest
from _flowkit import LEARNS, chromium, point_at, run_flow
from filelock import FileLock

# The run's Prefect server, in the environment before anything imports Prefect: Prefect reads it
# once into the settings that every thread falls back on (a process pool task runner's threads
# would otherwise start a temporary server of their own).
API_URL = os.environ["PREFECT_API_URL"] = _session_prefect.api_url()
# The temporary servers of the commands this worker starts without that URL keep their database
# in its Prefect home.
_session_prefect.seed_home(Path(os.environ["PREFECT_HOME"]))

import attnlab.flows  # noqa: E402, F401  (telemetry defaults before prefect and mlflow are imported)


@pytest.fixture(scope="session", autouse=True)
def prefect_harness(tmp_path_factory):
    """Task results and the generated datasets in temporary folders, the run's temporary Prefect
    server as the API (:data:`API_URL`, set above). The commands the tests start use it
    too (``PREFECT_API_URL``) rather than each starting a temporary server of its own, 12 CPU-s
    per command; the tests of that temporary server remove the variable."""
    from prefect.settings import PREFECT_API_URL, PREFECT_LOCAL_STORAGE_PATH, temporary_settings

    storage = tmp_path_factory.mktemp("prefect-storage")
    with temporary_settings(updates={PREFECT_LOCAL_STORAGE_PATH: storage, PREFECT_API_URL: API_URL}):
        os.environ["PREFECT_API_URL"] = API_URL
        try:
            yield
        finally:
            _drain_prefect_workers()
            os.environ.pop("PREFECT_API_URL", None)


def _drain_prefect_workers() -> None:
    """Send the logs and events this process still holds to the server, as Prefect's own test
    harness does before it stops its server: the run's pytest stops the server right after."""
    import inspect

    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain() -> None:
        for drained in (lambda: APILogWorker.instance().drain(), EventsWorker.drain_all):
            try:
                result = drained()
            except RuntimeError:  # the worker was never started
                continue
            if inspect.isawaitable(result):
                await result

    run_coro_as_sync(drain())


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
