"""Where attnlab's MLflow store is, whether it answers, and MLflow's error codes.

``MLFLOW_TRACKING_URI`` when set (a tracking server, used as is); otherwise the embedded store
``sqlite:///<dir>/mlflow.db`` with artifacts under ``<dir>/artifacts``, where ``<dir>`` is
``ATTNLAB_MLFLOW_DIR`` or ``./mlflow``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.flows.tracking.errors import ArtifactsLost, TrackingUnavailable
from attnlab.ops.retry import BUDGET_SECONDS, answers_late, retrying

if TYPE_CHECKING:
    from mlflow.exceptions import MlflowException

DEFAULT_DIR = "mlflow"


@dataclass(frozen=True)
class Store:
    """Where runs go: the tracking URI and, for the embedded store, its folder."""

    tracking_uri: str
    folder: Path | None = None  # None: a tracking server decides where artifacts go

    @property
    def embedded(self) -> bool:
        return self.folder is not None

    @property
    def artifact_root(self) -> Path | None:
        return self.folder / "artifacts" if self.folder is not None else None


def resolve_store() -> Store:
    """The store this process logs to (see the module docstring).

    A ``MLFLOW_TRACKING_URI`` of the form ``sqlite:///<dir>/mlflow.db`` is an embedded store in
    ``<dir>``: :func:`use_store` exports the embedded store's URI that way (``mlflow.set_tracking_uri``
    sets the variable, for child processes), and its artifacts must still go to ``<dir>/artifacts``.
    """
    uri = os.environ.get("MLFLOW_TRACKING_URI", "").strip()
    if uri.startswith("sqlite:///") and uri.endswith("/mlflow.db"):
        return Store(uri, Path(uri.removeprefix("sqlite:///")).parent.resolve())
    if uri:
        return Store(uri)
    folder = Path(os.environ.get("ATTNLAB_MLFLOW_DIR", "").strip() or DEFAULT_DIR).expanduser().resolve()
    return Store(f"sqlite:///{folder / 'mlflow.db'}", folder)


def use_store(store: Store | None = None) -> Store:
    """Point this process's MLflow at ``store`` (default: :func:`resolve_store`); returns it."""
    store = store or resolve_store()
    if store.folder is not None:
        store.folder.mkdir(parents=True, exist_ok=True)
    import mlflow

    mlflow.set_tracking_uri(store.tracking_uri)
    return store


@contextlib.contextmanager
def environ_set(**values: str) -> Iterator[None]:
    """Set environment variables for the duration (for the processes started meanwhile), then
    put back what was there."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _quick_http(timeout: float) -> contextlib.AbstractContextManager[None]:
    """Fail fast instead of MLflow's default 7 retries with back-off and 120 s timeout."""
    return environ_set(MLFLOW_HTTP_REQUEST_MAX_RETRIES="0", MLFLOW_HTTP_REQUEST_TIMEOUT=str(max(1, round(timeout))))


def reason(exc: BaseException) -> str:
    """A short reason for a connection failure, without the wall of nested exceptions."""
    text = str(exc)
    for needle, short in (
        ("Connection refused", "connection refused"),
        ("Name or service not known", "unknown host"),
        ("nodename nor servname", "unknown host"),
        ("timed out", "no answer in time"),
        ("Read timed out", "no answer in time"),
    ):
        if needle in text:
            return short
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first if len(first) <= 160 else first[:157] + "..."


retries = logging.getLogger("attnlab.tracking")


def check_store(store: Store, timeout: float = 3.0, writable: bool = True, budget: float = BUDGET_SECONDS) -> None:
    """Raise TrackingUnavailable (one line) unless ``store`` answers and, when ``writable``, a run
    can write to it.

    A store that answers late (see :func:`answers_late`) is asked again with back-off, each try
    waiting twice as long as the one before (from ``timeout`` s), for ``budget`` s in all; one
    that is absent is reported at once.

    For the embedded store this creates the folder and the database on first use, under the
    store's file lock (:mod:`attnlab.flows.tracking.store_guard`): a store that is damaged, half-migrated
    or missing beside earlier runs' artifacts is refused, never re-created; one that records its files
    in another folder (copied or moved: :mod:`attnlab.flows.tracking.store_home`) is refused with the command
    that relocates it; a read-only store or a full disk is refused before a run starts.
    """
    from attnlab.flows.tracking import store_guard, store_home, store_writable
    from mlflow import MlflowClient

    folder = store.folder  # None for a tracking server
    if folder is not None:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TrackingUnavailable(f"cannot create the MLflow folder {folder}: {exc.strerror}") from exc
    tries: list[int] = []
    started = time.monotonic()

    def ask() -> None:
        with _quick_http(timeout * 2 ** len(tries)):
            tries.append(1)
            MlflowClient(store.tracking_uri).search_experiments(max_results=1)

    def told(exc: BaseException, delay: float) -> None:
        retries.warning("the MLflow tracking store %s answers late (%s); asking again in %.1f s", store.tracking_uri, reason(exc), delay)

    try:
        with store_guard.guarded(folder) if folder is not None else contextlib.nullcontext():
            retrying(ask, answers_late, budget, on_retry=told)
        if folder is not None:
            store_home.check_home(folder)
            store_guard.check_artifacts_kept(folder)
        if folder is not None and writable:
            store_writable.check_writable(folder)
    except TrackingUnavailable:
        raise
    except Exception as exc:
        hint = (
            "start the server or unset MLFLOW_TRACKING_URI to use the embedded store" if not store.embedded else "check ATTNLAB_MLFLOW_DIR"
        )
        late = f" after {len(tries)} tries in {time.monotonic() - started:.0f} s" if len(tries) > 1 else ""
        raise TrackingUnavailable(f"cannot reach the MLflow tracking store {store.tracking_uri}: {reason(exc)}{late}; {hint}") from exc


def folder_identity(folder: Path | None) -> tuple[int, int] | None:
    """(device, inode) of ``folder``, or None when there is none: a folder deleted and made anew
    by a later write has another."""
    try:
        info = folder.stat() if folder is not None else None
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if info is not None else None


def artifact_root_lost(identity: tuple[int, int] | None) -> bool:
    """True when the embedded store's artifacts folder is no longer the one whose ``identity``
    (:func:`folder_identity`) a run started with; False when it had none."""
    return identity is not None and folder_identity(resolve_store().artifact_root) != identity


def check_artifact_root(identity: tuple[int, int] | None) -> None:
    """Raise ArtifactsLost when :func:`artifact_root_lost`."""
    if artifact_root_lost(identity):
        raise ArtifactsLost(f"the MLflow store's artifacts folder {resolve_store().artifact_root} was deleted during the run")


def unreachable(store: Store, timeout: float = 3.0) -> str | None:
    """Why the tracking server of ``store`` does not answer now (one try, about ``timeout`` s at
    most), or None when it answers; always None for the embedded store (a file, not a server)."""
    if store.embedded:
        return None
    try:
        check_store(store, timeout, budget=0)
    except TrackingUnavailable as exc:
        return reason(exc.__cause__) if exc.__cause__ is not None else str(exc)
    return None


def _error_code(exc: MlflowException) -> int:
    from mlflow.protos.databricks_pb2 import ErrorCode

    return ErrorCode.Value(exc.error_code) if isinstance(exc.error_code, str) else int(exc.error_code)


def is_missing(exc: BaseException) -> bool:
    """True for MLflow's 'does not exist' errors (no such model, version, alias, run)."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_DOES_NOT_EXIST

    return isinstance(exc, MlflowException) and _error_code(exc) == RESOURCE_DOES_NOT_EXIST


def already_exists(exc: BaseException) -> bool:
    """True for MLflow's 'already exists' errors (something created concurrently)."""
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS

    return isinstance(exc, MlflowException) and _error_code(exc) == RESOURCE_ALREADY_EXISTS
