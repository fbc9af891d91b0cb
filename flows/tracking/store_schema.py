"""A new embedded store's database, laid as a copy of an empty one already migrated to MLflow's
schema.

MLflow builds a new SQLite store by running its ~70 alembic revisions one by one: about 1.5 CPU-s
for every new store folder (every experiment folder a user starts, every store of the test suite).
The result is the same for every store of one MLflow version, so it is built once, in attnlab's
cache (``<cache>/mlflow-schema/mlflow-<version>-<revision>.db``), and copied (0.05 s). The copy
holds only what the migrations write (the tables, the schema revision, the default workspace);
MLflow adds the Default experiment, with this store's artifact folder, when it first opens it, as
it does for a store it built itself.

An older store (one written by an earlier MLflow, whole at its own revision) is migrated to the
head by MLflow's own migrations after a copy of it is kept (:func:`upgrade`); telling it from one
left mid-migration takes the tables and columns of its revision (:func:`columns_at`), read from an
empty database migrated to that revision and kept in the cache beside the head's.
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


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every schema revision of the installed MLflow's migrations (a store at another one was
    written by a newer MLflow)."""
    from alembic.script import ScriptDirectory
    from mlflow.store.db.utils import _get_alembic_config

    return frozenset(script.revision for script in ScriptDirectory.from_config(_get_alembic_config("sqlite://")).walk_revisions())


def schema_path(revision: str | None = None) -> Path:
    """Where this MLflow version's empty database migrated to ``revision`` (default: the head) is kept."""
    import mlflow

    return cache_root() / "mlflow-schema" / f"mlflow-{mlflow.__version__}-{revision or head_revision()}.db"


def is_sound(path: Path, revision: str | None = None) -> bool:
    """Whether ``path`` is a whole SQLite database at ``revision`` (default: MLflow's head)."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            if conn.execute("PRAGMA quick_check").fetchone()[0] != "ok":
                return False
            return [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")] == [revision or head_revision()]
    except sqlite3.Error:
        return False


def migrated_schema(revision: str | None = None) -> Path:
    """The empty database migrated to ``revision`` (default: the head; :func:`schema_path`), built
    first when it is missing or not sound (one process at a time, under a file lock beside it)."""
    from filelock import FileLock

    path = schema_path(revision)
    if path.is_file() and is_sound(path, revision):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(path.with_suffix(".lock"), timeout=600):
        if not (path.is_file() and is_sound(path, revision)):
            _build(path, revision)
    return path


def table_columns(conn: sqlite3.Connection) -> dict[str, frozenset[str]]:
    """Each table of the database (SQLite's own apart) with the names of its columns."""
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    return {name: frozenset(row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')) for name in tables}


@functools.cache
def columns_at(revision: str) -> dict[str, frozenset[str]] | None:
    """The tables and columns of MLflow's schema at ``revision``; None when the installed MLflow
    does not know that revision."""
    if revision not in known_revisions():
        return None
    with contextlib.closing(sqlite3.connect(f"file:{migrated_schema(revision)}?mode=ro", uri=True)) as conn:
        return table_columns(conn)


def upgrade(db: Path, backup: Path) -> None:
    """Copy the older store's database ``db`` to ``backup`` (SQLite's online backup) and migrate
    ``db`` to MLflow's head revision with MLflow's own migrations, as MLflow would when it opens a
    store lacking a newer table; the copy stays in case the migration is interrupted."""
    import sqlalchemy
    from mlflow.store.db.utils import _upgrade_db

    backup.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(db)) as source, contextlib.closing(sqlite3.connect(backup)) as copy:
        source.backup(copy)
    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    try:
        _upgrade_db(engine)
    finally:
        engine.dispose()


def _build(path: Path, revision: str | None) -> None:
    import sqlalchemy
    from alembic import command
    from mlflow.store.db.utils import _get_alembic_config, _initialize_tables
    from mlflow.store.tracking.dbmodels.initial_models import Base as InitialBase

    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=".building-", suffix=".db")
    os.close(handle)
    try:
        engine = sqlalchemy.create_engine(f"sqlite:///{partial}")
        try:
            if revision is None:
                _initialize_tables(engine)
            else:
                InitialBase.metadata.create_all(engine)  # what MLflow lays before its first revision
                config = _get_alembic_config(str(engine.url))
                with engine.begin() as connection:
                    config.attributes["connection"] = connection
                    command.upgrade(config, revision)
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
