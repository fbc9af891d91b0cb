"""Fixtures of the flow and CLI tests: one Prefect test harness per session, throw-away MLflow
stores, and a store with a trained model shared by the session (helpers: _flowkit.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import attnlab.flows  # noqa: F401  (telemetry defaults before prefect and mlflow are imported)
from _flowkit import LEARNS, chromium, point_at, run_flow


@pytest.fixture(scope="session", autouse=True)
def prefect_harness(tmp_path_factory):
    """A temporary Prefect server and database for the whole session; task results and the
    generated datasets go to temporary folders."""
    from prefect.settings import PREFECT_LOCAL_STORAGE_PATH, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    storage = tmp_path_factory.mktemp("prefect-storage")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path_factory.mktemp("attnlab-cache")))
        with temporary_settings(updates={PREFECT_LOCAL_STORAGE_PATH: storage}):
            with prefect_test_harness(server_startup_timeout=600):
                yield


@pytest.fixture
def empty_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh embedded store folder (nothing created yet)."""
    return point_at(tmp_path / "mlflow", monkeypatch)


@pytest.fixture(scope="session")
def learned_store(tmp_path_factory, prefect_harness) -> tuple[Path, dict]:
    """A store holding one run of a model that learned the date task; (folder, summary)."""
    folder = tmp_path_factory.mktemp("learned") / "mlflow"
    return folder, run_flow(folder, **LEARNS)


@pytest.fixture(autouse=True)
def _no_tracking_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never talk to a real tracking server."""
    if os.environ.get("MLFLOW_TRACKING_URI", "").startswith("http"):
        monkeypatch.delenv("MLFLOW_TRACKING_URI")


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
