"""A new embedded store is a copy of a migrated empty database kept in the cache: the same store
MLflow would have built, made once per MLflow version, rebuilt when damaged, and never needed."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest

from attnlab.flows.tracking import store_schema
from attnlab.flows.tracking.store import Store, check_store


def _new_store(folder: Path) -> Path:
    check_store(Store(f"sqlite:///{folder / 'mlflow.db'}", folder))
    return folder / "mlflow.db"


def _contents(db: Path) -> tuple[set[str], dict[str, list[tuple]]]:
    """(every table, index and trigger with its columns, the rows of every table but the times)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        objects = conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchall()
        tables = [name for kind, name in objects if kind == "table"]
        columns = {name: sorted(conn.execute(f'PRAGMA table_info("{name}")').fetchall()) for name in tables}
        shapes = {f"{kind} {name} {columns.get(name, '')}" for kind, name in objects}
        rows = {name: sorted(conn.execute(f'SELECT * FROM "{name}"').fetchall()) for name in tables}
    rows["experiments"] = [row[:4] for row in rows["experiments"]]  # id, name, artifact location, stage
    return shapes, rows


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_new_store_is_the_store_mlflow_builds_itself(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)  # the Default experiment's artifact location is MLflow's default, below the working folder
    copied = _new_store(tmp_path / "copied")
    assert store_schema.schema_path().is_file()  # made by that first store
    built = tmp_path / "built" / "mlflow.db"
    built.parent.mkdir()
    MlflowClient(f"sqlite:///{built}").search_experiments()  # MLflow's own migrations, no copy
    assert _contents(copied) == _contents(built)


def test_the_migrated_copy_is_made_once_and_a_damaged_one_is_made_again(cache: Path, tmp_path: Path) -> None:
    _new_store(tmp_path / "one")
    schema = store_schema.schema_path()
    made = schema.stat().st_mtime_ns
    _new_store(tmp_path / "two")
    assert schema.stat().st_mtime_ns == made  # copied, not made again
    schema.write_bytes(schema.read_bytes()[:4096])  # cut short: not a sound database
    db = _new_store(tmp_path / "three")
    assert store_schema.is_sound(schema) and schema.stat().st_mtime_ns != made
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT name FROM experiments").fetchall() == [("Default",)]


def test_without_a_writable_cache_mlflow_builds_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_only_folder: Path) -> None:
    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(read_only_folder / "cache"))
    db = _new_store(tmp_path / "store")
    assert not store_schema.schema_path().exists()
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT name FROM experiments").fetchall() == [("Default",)]
