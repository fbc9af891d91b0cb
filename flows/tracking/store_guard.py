"""The embedded store's database: created and migrated by one process at a time, never silently
replaced, and checked for being writable before a run starts.

MLflow creates and migrates a SQLite store (alembic, ~70 revisions, not in one transaction) the
first time a process opens it. Two processes doing it at once, or one killed while doing it, leave
it mid-migration (``_alembic_tmp_*`` tables, a revision behind its columns), and every later
command fails. :func:`guarded` holds a file lock beside the database (``<store>/locks/store.lock``)
whenever the store is not healthy, while it is inspected and then created, migrated or rebuilt:

- healthy (header ``SQLite format 3``, ``PRAGMA quick_check`` ok up to 256 MiB, MLflow's head
  revision, all its tables, no leftovers): passes without the lock;
- missing, 0 bytes or without tables: MLflow creates it, unless ``artifacts/`` holds earlier runs;
  then it is refused, never re-created over them;
- not a readable SQLite database: refused (a journal left by a writer killed mid-transaction is
  rolled back first, as SQLite's next writer would: that store is healthy);
- written by an earlier MLflow (whole at its own, older revision: its tables and columns are that
  revision's): migrated to the head by MLflow's migrations, a copy of it kept first in
  ``<store>/backups/``;
- written by a newer MLflow (a revision the installed one does not know): refused;
- left mid-migration: rebuilt when it holds nothing (no run, model or experiment of a user) and
  there are no artifacts; refused otherwise.

Every refusal is one line: what is wrong, where, and how to restore. Whether a run can write to
the store is :mod:`attnlab.flows.tracking.store_writable`'s.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from attnlab.flows.tracking import store_schema
from attnlab.flows.tracking.errors import TrackingUnavailable
from attnlab.flows.tracking.store_writable import not_writable

if TYPE_CHECKING:
    from filelock import BaseFileLock

log = logging.getLogger("attnlab.tracking")
HEADER = b"SQLite format 3\x00"
RESTORE = "restore mlflow.db from a backup (see 'Backup and restore' in mlflow/README.md)"
#: Longest wait for another process creating or migrating the store (seconds).
LOCK_TIMEOUT = 600
#: Largest database that ``PRAGMA quick_check`` reads in full (~0.8 s for 250 MiB here; it holds a
#: read lock that concurrent writers wait for): above it only the header and the schema are read.
QUICK_CHECK_MAX_BYTES = 256 * 2**20
#: sqlite3's code for a read-only connection that meets a hot journal (a writer died mid-transaction).
SQLITE_READONLY_ROLLBACK = 776
#: Tables a new store fills by itself (the Default experiment, id 0, is checked apart).
_BOOKKEEPING = {"alembic_version", "sqlite_sequence", "workspaces", "experiments"}


class StoreDamaged(TrackingUnavailable):
    """The embedded store's database is missing, empty, unreadable or half-migrated."""


@dataclass(frozen=True)
class Health:
    """What :func:`inspect_db` found. ``state``: absent, blank (0 bytes or no tables), unreadable,
    mid_migration, older (whole at an earlier revision), newer (at a revision unknown here),
    behind (revision or tables short of MLflow's, and not an older revision's) or ok."""

    state: str
    detail: str = ""
    holds_data: bool = False


def inspect_db(db: Path) -> Health:
    """The health of the SQLite file ``db``, read-only: it changes nothing but the rollback of a
    transaction whose writer was killed (:func:`_roll_back_hot_journal`)."""
    try:
        with db.open("rb") as handle:
            header = handle.read(len(HEADER))
    except FileNotFoundError:
        return Health("absent")
    except OSError as exc:
        return Health("unreadable", exc.strerror or str(exc))
    if not header:
        return Health("blank", "empty (0 bytes)")
    if header != HEADER:
        return Health("unreadable", "its header is not 'SQLite format 3'")
    try:
        _roll_back_hot_journal(db)
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)) as conn:
            check = conn.execute("PRAGMA quick_check").fetchone()[0] if db.stat().st_size <= QUICK_CHECK_MAX_BYTES else "ok"
            if check != "ok":
                return Health("unreadable", f"PRAGMA quick_check: {check}")
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            revisions = [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")] if "alembic_version" in tables else []
            holds = _holds_data(conn, tables)
            columns = store_schema.table_columns(conn) if len(revisions) == 1 and revisions != [store_schema.head_revision()] else {}
    except sqlite3.DatabaseError as exc:
        return Health("unreadable", str(exc))
    leftovers = sorted(name for name in tables if name.startswith("_alembic_tmp_"))
    if not tables - {"sqlite_sequence"}:
        return Health("blank", "without tables")
    if leftovers:
        return Health("mid_migration", ", ".join(leftovers), holds)
    missing = sorted(_mlflow_tables() - tables)
    if revisions == [store_schema.head_revision()] and not missing:
        return Health("ok")
    if columns:
        expected = store_schema.columns_at(revisions[0])
        if expected is None:
            return Health("newer", revisions[0], holds)
        if columns == expected:
            return Health("older", revisions[0], holds)
    return Health("behind", f"revision {revisions or 'none'}, missing tables {missing or 'none'}", holds)


def _roll_back_hot_journal(db: Path) -> None:
    """Undo the transaction of a writer killed in its middle (SIGKILL, power loss), which left a
    hot ``mlflow.db-journal``: a read-only connection cannot roll it back and refuses to read
    (SQLITE_READONLY_ROLLBACK), a read-write one rolls it back on its first read. A no-op without
    a hot journal; left to the read-only check when the folder cannot be written."""
    if not db.with_name(f"{db.name}-journal").exists():
        return  # no journal, none to roll back: the usual case costs one stat, not a connection
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", None) != SQLITE_READONLY_ROLLBACK:
            return
        with contextlib.suppress(sqlite3.DatabaseError), contextlib.closing(sqlite3.connect(db, timeout=60)) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()


def _holds_data(conn: sqlite3.Connection, tables: set[str]) -> bool:
    """True when anything but what a new store writes by itself is in the database."""
    if "experiments" in tables and conn.execute("SELECT count(*) FROM experiments WHERE experiment_id != 0").fetchone()[0]:
        return True
    return any(conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in sorted(tables - _BOOKKEEPING))


def _mlflow_tables() -> set[str]:
    import mlflow.store.tracking.sqlalchemy_store  # noqa: F401  (defines the ORM tables)
    from mlflow.store.db.base_sql_model import Base

    return set(Base.metadata.tables)


def _has_artifacts(artifacts: Path) -> bool:
    return artifacts.is_dir() and any(artifacts.iterdir())


def store_lock(folder: Path) -> BaseFileLock:
    """The file lock of the store in ``folder`` (``locks/store.lock``, beside the promotion locks)."""
    from filelock import FileLock

    (folder / "locks").mkdir(parents=True, exist_ok=True)
    return FileLock(folder / "locks" / "store.lock", timeout=LOCK_TIMEOUT)


@contextlib.contextmanager
def guarded(folder: Path) -> Iterator[None]:
    """Make ``<folder>/mlflow.db`` safe to open: inside the block, the caller opens it with MLflow
    (which creates and migrates it when needed), under the store lock unless it was healthy.
    Raises StoreDamaged or StoreNotWritable (one line) instead."""
    db, artifacts = folder / "mlflow.db", folder / "artifacts"
    if inspect_db(db).state == "ok":
        yield
        return
    from filelock import Timeout

    try:
        lock = store_lock(folder)
        lock.acquire()
    except Timeout:
        raise StoreDamaged(
            f"another process has been creating or migrating the MLflow store {db} for over {LOCK_TIMEOUT} s "
            f"(lock {folder / 'locks' / 'store.lock'}); wait for it or stop it"
        ) from None
    except OSError as exc:
        raise not_writable(folder, exc) from exc
    try:
        _settle(db, artifacts, inspect_db(db))
        yield
    finally:
        lock.release()


def check_not_lost(folder: Path) -> None:
    """Raise StoreDamaged (one line) when ``<folder>/mlflow.db`` is missing or empty while
    ``artifacts/`` holds earlier runs: the history is lost, not yet to be made. Every command says
    so before saying there is nothing to read."""
    db = folder / "mlflow.db"
    if db.is_file() and db.stat().st_size > 0:
        return
    _refuse_lost(db, folder / "artifacts", inspect_db(db))


def check_artifacts_kept(folder: Path) -> None:
    """Raise StoreDamaged (one line) when ``<folder>/mlflow.db`` records finished runs (each of
    which logged files) but ``artifacts/``, which holds their files (models, benchmarks, figures),
    is gone: a run would recreate it empty and fail later, half-way, on the first earlier file it
    needs."""
    artifacts, db = folder / "artifacts", folder / "mlflow.db"
    if artifacts.is_dir() or not db.is_file():
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)) as conn:
            runs = conn.execute("SELECT count(*) FROM runs WHERE status = 'FINISHED'").fetchone()[0]
    except sqlite3.DatabaseError:
        return  # a new store without tables yet, or one that the checks before refuse
    if runs:
        raise StoreDamaged(
            f"the MLflow store {db} records {runs} finished run(s) but {artifacts}, which holds their files, is missing; "
            f"restore {artifacts} from a backup, or move {db} away to start a new store"
        )


def _refuse_lost(db: Path, artifacts: Path, health: Health) -> None:
    if health.state in ("absent", "blank") and _has_artifacts(artifacts):
        what = "missing" if health.state == "absent" else health.detail
        raise StoreDamaged(
            f"the MLflow store {db} is {what} but {artifacts} holds the files of earlier runs; "
            f"{RESTORE}, or move {artifacts} away to start a new store"
        )


def _settle(db: Path, artifacts: Path, health: Health) -> None:
    """Under the store lock: refuse ``db``, or leave it for MLflow to create or migrate."""
    _refuse_lost(db, artifacts, health)
    if health.state == "unreadable":
        start_over = "" if _has_artifacts(artifacts) else f", or delete {db} to start a new store"
        raise StoreDamaged(f"the MLflow store {db} is not a readable SQLite database ({health.detail}); {RESTORE}{start_over}")
    if health.state == "newer":
        raise StoreDamaged(
            f"the MLflow store {db} was written by a newer MLflow (schema revision {health.detail}, unknown to the MLflow "
            f"{_mlflow_version()} installed here); use attnlab with that MLflow, or point ATTNLAB_MLFLOW_DIR at another folder"
        )
    if health.state == "older" and (health.holds_data or _has_artifacts(artifacts)):
        _upgrade(db, health.detail)
        return
    if health.state in ("mid_migration", "behind") and (health.holds_data or _has_artifacts(artifacts)):
        raise StoreDamaged(
            f"the MLflow store {db} holds runs but was left mid-migration by an interrupted MLflow schema "
            f"upgrade ({health.detail}); {RESTORE}"
        )
    if health.state in ("mid_migration", "behind", "older"):
        for path in (db, *(db.with_name(db.name + suffix) for suffix in ("-journal", "-wal", "-shm"))):
            path.unlink(missing_ok=True)  # it holds nothing: it is built afresh
    if health.state != "ok":
        store_schema.lay_new_database(db)  # else MLflow migrates it: an older store, or no copy could be made


def _upgrade(db: Path, revision: str) -> None:
    """Migrate the older store ``db`` (at ``revision``) to MLflow's head, a copy kept first."""
    import time

    import sqlalchemy.exc

    backup = db.parent / "backups" / f"mlflow-{revision}-{time.strftime('%Y%m%dT%H%M%S')}.db"
    try:
        store_schema.upgrade(db, backup)
    except (OSError, sqlite3.Error, sqlalchemy.exc.SQLAlchemyError) as exc:
        if not backup.is_file():
            raise not_writable(db.parent, exc) from exc
        raise StoreDamaged(
            f"migrating the MLflow store {db} from schema revision {revision} to MLflow {_mlflow_version()}'s failed "
            f"({getattr(exc, 'strerror', None) or exc}); its copy from before is kept at {backup}"
        ) from exc
    log.warning(
        "migrated the MLflow store %s from an earlier MLflow's schema (revision %s) to MLflow %s's; its copy from before is kept at %s",
        db, revision, _mlflow_version(), backup,
    )  # fmt: skip


def _mlflow_version() -> str:
    import mlflow

    return str(mlflow.__version__)
