"""Whether a run can write to the embedded store: free space on its disk, a database that takes a
write and an artifacts folder that takes a file; each refusal one line."""

from __future__ import annotations

import contextlib
import errno
import shutil
import sqlite3
import tempfile
from pathlib import Path

from attnlab.flows.tracking.errors import TrackingUnavailable

#: Free space below which no run starts: a run's metrics, plots and model need a few MB.
MIN_FREE_BYTES = 32 * 2**20


class StoreNotWritable(TrackingUnavailable):
    """The embedded store is read-only or its disk is full."""


def check_writable(folder: Path) -> None:
    """Raise StoreNotWritable (one line) unless a run can write to the store in ``folder``: free
    space on its disk, the database (a write that is rolled back) and the artifacts folder."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError as exc:
        raise not_writable(folder, exc) from exc
    if free < MIN_FREE_BYTES:
        raise not_writable(folder, OSError(errno.ENOSPC, f"{free / 2**20:.1f} MiB free, a run needs {MIN_FREE_BYTES // 2**20} MiB"))
    try:
        with contextlib.closing(sqlite3.connect(folder / "mlflow.db", timeout=60, isolation_level=None)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE alembic_version SET version_num = version_num")
            conn.execute("ROLLBACK")
        artifacts = folder / "artifacts"
        artifacts.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=artifacts, prefix=".attnlab-write-check-"):
            pass
    except (OSError, sqlite3.Error) as exc:
        raise not_writable(folder, exc) from exc


def not_writable(folder: Path, exc: BaseException) -> StoreNotWritable:
    text = str(exc).lower()
    if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "disk is full" in text:
        detail = getattr(exc, "strerror", None) or str(exc)
        return StoreNotWritable(
            f"the disk of the MLflow store {folder} is full ({detail}); free some space, or point "
            "ATTNLAB_MLFLOW_DIR at a folder on another disk"
        )
    if getattr(exc, "errno", None) in (errno.EROFS, errno.EACCES, errno.EPERM) or "readonly" in text or "unable to open" in text:
        return StoreNotWritable(
            f"the MLflow store {folder} is read-only ({getattr(exc, 'strerror', None) or exc}); make it writable, "
            "or point ATTNLAB_MLFLOW_DIR at a writable folder"
        )
    return StoreNotWritable(f"cannot write to the MLflow store {folder}: {getattr(exc, 'strerror', None) or exc}")
