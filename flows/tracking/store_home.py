"""The embedded store's recorded artifact locations: refused when they lie outside its folder (a
copied or moved store would write into the original), rewritten by ``attnlab store relocate``.

The rules are :mod:`attnlab.ops.store_locations`; this module reads and writes the SQLite file with
``sqlite3`` under the store lock (:func:`attnlab.flows.tracking.store_guard.store_lock`), in one
transaction.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from attnlab.flows.tracking.errors import TrackingUnavailable
from attnlab.ops.store_locations import foreign_roots, relocated

RELOCATE = "attnlab store relocate"
#: Every column where MLflow records where files are: (table, column, extra WHERE clause).
LOCATION_COLUMNS = (
    ("experiments", "artifact_location", ""),
    ("runs", "artifact_uri", ""),
    ("logged_models", "artifact_location", ""),
    ("model_versions", "source", ""),
    ("model_versions", "storage_location", ""),
    ("trace_tags", "value", "AND key = 'mlflow.artifactLocation'"),
)


class StoreElsewhere(TrackingUnavailable):
    """The embedded store records its files in another folder (it was copied or moved)."""


@dataclass(frozen=True)
class Relocation:
    """What :func:`relocate` rewrote: the old folders and the locations changed per table."""

    old_roots: tuple[str, ...]
    changed: dict[str, int]


def _connect(db: Path, read_only: bool) -> sqlite3.Connection:
    uri = f"{db.resolve().as_uri()}?mode={'ro' if read_only else 'rw'}"
    return sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)


def _roots(conn: sqlite3.Connection, folder: Path) -> list[str]:
    rows = conn.execute("SELECT experiment_id, name, artifact_location FROM experiments").fetchall()
    return foreign_roots(rows, str(folder))


def recorded_elsewhere(folder: Path) -> list[str]:
    """The folders other than ``folder`` where the store in ``folder`` records its files."""
    with contextlib.closing(_connect(folder / "mlflow.db", read_only=True)) as conn:
        return _roots(conn, folder)


def check_home(folder: Path) -> None:
    """Raise StoreElsewhere (one line, naming the fix) when the store in ``folder`` records its
    files outside it."""
    try:
        elsewhere = recorded_elsewhere(folder)
    except sqlite3.Error:
        return  # not readable this way: MLflow's own open reports why
    if elsewhere:
        raise StoreElsewhere(
            f"the MLflow store {folder} records its files under {' and '.join(elsewhere)} (it was copied or moved "
            f"from there), so its runs would write into that folder; run '{RELOCATE}' to keep them in {folder}"
        )


def relocate(folder: Path) -> Relocation:
    """Rewrite every location the store in ``folder`` records under another store folder to the
    same place under ``folder``, in one transaction under the store lock."""
    from attnlab.flows.tracking import store_guard

    with store_guard.store_lock(folder), contextlib.closing(_connect(folder / "mlflow.db", read_only=False)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            old_roots = _roots(conn, folder)
            tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            changed = {}
            for table, column, where in LOCATION_COLUMNS:
                if table in tables:
                    changed[f"{table}.{column}"] = _rewrite(conn, table, column, where, old_roots, str(folder))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return Relocation(tuple(old_roots), changed)


def _rewrite(conn: sqlite3.Connection, table: str, column: str, where: str, old_roots: list[str], new: str) -> int:
    """Rewrite ``table.column`` from each of ``old_roots`` to ``new``; how many values changed."""
    count = 0
    for rowid, value in conn.execute(f'SELECT rowid, "{column}" FROM "{table}" WHERE "{column}" IS NOT NULL {where}').fetchall():
        moved = next((m for m in (relocated(value, old, new) for old in old_roots) if m is not None), None)
        if moved is not None and moved != value:
            conn.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid = ?', (moved, rowid))
            count += 1
    return count
