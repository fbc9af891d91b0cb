"""A new embedded store's database, laid as a copy of an empty one already migrated to MLflow's
schema.

MLflow builds a new SQLite store by running its ~70 alembic revisions one by one: about 1.5 CPU-s
for every new store folder (every experiment folder a user starts, every store of the test suite).
The result is the same for every store of one MLflow version, so it is built once, in attnlab's
cache (``<cache>/mlflow-schema/mlflow-<version>-<revision>.db``), and copied (0.05 s). The copy
holds only what the migrations write (the tables, the schema revision, the default workspace);
MLflow adds the Default experiment, with this store's artifact folder, when it first opens it, as
it does for a store it built itself.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from attnlab.data.cache import cache_root

log = logging.getLogger("attnlab.tracking")


@functools.cache
def head_revision() -> str:
    """MLflow's schema head revision (alembic reads its ~70 revision files to find it: once a process)."""
    from mlflow.store.db.utils import _get_latest_schema_revision

    return str(_get_latest_schema_revision())


def schema_path() -> Path:
    """Where this MLflow version's migrated empty database is kept."""
    import mlflow

    return cache_root() / "mlflow-schema" / f"mlflow-{mlflow.__version__}-{head_revision()}.db"


def is_sound(path: Path) -> bool:
    """Whether ``path`` is a whole SQLite database at MLflow's head schema revision."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                return False
            return [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")] == [head_revision()]
    except sqlite3.Error:
        return False


def migrated_schema() -> Path:
    """The migrated empty database (:func:`schema_path`), built first when it is missing or not
    sound (one process at a time, under a file lock beside it)."""
    from filelock import FileLock

    path = schema_path()
    if path.is_file() and is_sound(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_suffix(".lock"), timeout=600):
        if not (path.is_file() and is_sound(path)):
            _build(path)
    return path


def _build(path: Path) -> None:
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=".building-", suffix=".db")
    os.close(handle)
    try:
        engine = sqlalchemy.create_engine(f"sqlite:///{partial}")
        try:
            _initialize_tables(engine)
        finally:
            engine.dispose()
        os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)


def lay_new_database(db: Path) -> bool:
    """Put a copy of the migrated empty database at ``db`` (whose store holds nothing), atomically;
    False when the copy cannot be made (a cache that cannot be written, say), and MLflow then
    builds ``db`` itself as before."""
    import sqlalchemy.exc
    from filelock import Timeout

    try:
        schema = migrated_schema()
        handle, partial = tempfile.mkstemp(dir=db.parent, prefix=".mlflow-", suffix=".db")
        os.close(handle)
        try:
            shutil.copyfile(schema, partial)
            for leftover in (db.with_name(db.name + suffix) for suffix in ("-journal", "-wal", "-shm")):
                leftover.unlink(missing_ok=True)
            os.replace(partial, db)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(partial)
    except (OSError, sqlite3.Error, sqlalchemy.exc.SQLAlchemyError, Timeout) as exc:
        log.debug("new store %s: no migrated copy (%s); MLflow builds it", db, exc)
        return False
    return True
