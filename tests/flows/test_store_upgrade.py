"""A store written by an earlier MLflow (whole at an older schema revision) is migrated to the
installed MLflow's schema with a copy kept first, and keeps its runs; one at an older revision
whose tables are not that revision's (left mid-migration) and one written by a newer MLflow are
refused in one line, unchanged. The older store is the 0.1.0 fixture taken one revision down by
MLflow's own migrations, as the MLflow before the installed one left it."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from _flowkit import assert_one_line_error, point_at
from test_store_integrity import TINY_ARGS, attnlab, fingerprint

from attnlab.flows.tracking import store_schema
from attnlab.flows.tracking.store_guard import inspect_db

FIXTURE = Path(__file__).parents[1] / "fixtures" / "store-0.1.0"
RUN = "6ab7b6b1d16046509019a4666989b404"
ATTNLAB = str(Path(sys.executable).with_name("attnlab"))


def revision_of(db: Path) -> str:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT version_num FROM alembic_version").fetchone()[0]


def one_revision_down(db: Path) -> str:
    """Migrate ``db`` one schema revision down with MLflow's migrations; that revision."""
    import sqlalchemy
    from alembic import command
    from mlflow.store.db.utils import _get_alembic_config

    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    try:
        config = _get_alembic_config(str(engine.url))
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "-1")
    finally:
        engine.dispose()
    return revision_of(db)


@pytest.fixture
def older_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> tuple[Path, str]:
    """The 0.1.0 store relocated into its folder, then taken one revision down: (store, revision)."""
    store = point_at(tmp_path / "mlflow", monkeypatch)
    shutil.copytree(FIXTURE, store)
    assert attnlab(capsys, "store", "relocate")[0] == 0
    revision = one_revision_down(store / "mlflow.db")
    assert revision != store_schema.head_revision()
    return store, revision


def test_an_earlier_mlflows_store_is_migrated_with_a_copy_kept_and_its_runs_listed(older_store: tuple[Path, str]) -> None:
    import mlflow

    store, revision = older_store
    assert inspect_db(store / "mlflow.db").state == "older"
    env = {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}
    listed = subprocess.run([ATTNLAB, "runs"], env={**env, "ATTNLAB_MLFLOW_DIR": str(store)}, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0 and RUN[:8] in listed.stdout, listed.stderr
    (backup,) = (store / "backups").glob(f"mlflow-{revision}-*.db")
    assert listed.stderr.strip().splitlines() == [
        f"migrated the MLflow store {store / 'mlflow.db'} from an earlier MLflow's schema (revision {revision}) to MLflow "
        f"{mlflow.__version__}'s; its copy from before is kept at {backup}"
    ]
    assert revision_of(backup) == revision and revision_of(store / "mlflow.db") == store_schema.head_revision()
    assert inspect_db(store / "mlflow.db").state == "ok"


def test_a_failed_migration_names_the_copy_kept(older_store: tuple[Path, str], capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow.store.db.utils

    store, revision = older_store

    def disk_full(engine) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(mlflow.store.db.utils, "_upgrade_db", disk_full)
    code, out, err = attnlab(capsys, "runs")
    (backup,) = (store / "backups").glob(f"mlflow-{revision}-*.db")
    assert code == 2
    assert_one_line_error(
        err, f"migrating the MLflow store {store / 'mlflow.db'} from schema revision {revision} to MLflow", "database or disk is full",
        f"its copy from before is kept at {backup}",
    )  # fmt: skip


def test_an_older_revision_with_a_newer_column_is_mid_migration_and_refused(older_store: tuple[Path, str], capsys) -> None:
    """What a migration killed after its first change, before it wrote its revision, leaves."""
    store, revision = older_store
    with contextlib.closing(sqlite3.connect(store / "mlflow.db")) as conn, conn:
        conn.execute("ALTER TABLE runs ADD COLUMN half_done TEXT")
    before = fingerprint(store)
    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 2
    assert_one_line_error(err, f"the MLflow store {store / 'mlflow.db'} holds runs but was left mid-migration", f"revision ['{revision}']")
    assert fingerprint(store) == before and not (store / "backups").exists()


def test_a_newer_mlflows_store_is_refused_unchanged(older_store: tuple[Path, str], capsys) -> None:
    store, _ = older_store
    with contextlib.closing(sqlite3.connect(store / "mlflow.db")) as conn, conn:
        conn.execute("UPDATE alembic_version SET version_num = 'f00dfeedbeef'")
    before = fingerprint(store)
    code, out, err = attnlab(capsys, "runs")
    assert code == 2
    assert_one_line_error(
        err, f"the MLflow store {store / 'mlflow.db'} was written by a newer MLflow (schema revision f00dfeedbeef, unknown to the MLflow",
        "use attnlab with that MLflow",
    )  # fmt: skip
    assert fingerprint(store) == before


def test_the_columns_of_a_revision_are_those_of_a_store_migrated_to_it() -> None:
    with contextlib.closing(sqlite3.connect(store_schema.migrated_schema())) as conn:
        assert store_schema.columns_at(store_schema.head_revision()) == store_schema.table_columns(conn)
    assert store_schema.columns_at("f00dfeedbeef") is None
