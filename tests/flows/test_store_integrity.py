"""The embedded store under faults, each reproduced with a real store and real processes: several
runs creating it at once, a migration killed half-way, a damaged database beside earlier runs'
artifacts, a read-only store, a full disk."""

from __future__ import annotations

import contextlib
import hashlib
import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _disks import fill, small_tmpfs
from _flowkit import TINY, assert_one_line_error, client_for, preloaded_processes
from _store_processes import use_the_store

from attnlab.flows.cli import app as cli

TINY_ARGS = [f"-o{key}={value}" for key, value in {**TINY, "epochs": 1}.items()]
#: Run in a child process: open a fresh store with MLflow and die (like kill -9) right after its
#: schema migration has created its Nth ``_alembic_tmp_*`` table.
KILLED_MID_MIGRATION = """
import os, sys
from sqlalchemy import event
from sqlalchemy.engine import Engine
created = []
@event.listens_for(Engine, "after_cursor_execute")
def die(conn, cursor, statement, *args):
    if statement.lstrip().upper().startswith("CREATE TABLE _ALEMBIC_TMP_"):
        created.append(statement)
        if len(created) == int(sys.argv[2]):
            os._exit(137)
from mlflow import MlflowClient
MlflowClient(f"sqlite:///{sys.argv[1]}/mlflow.db").search_experiments()
"""

WITH_RUNS = """
import sys
import time
from pathlib import Path
from mlflow import MlflowClient
from attnlab.flows.tracking.store import Store, check_store
folder = Path(sys.argv[1])
check_store(Store(f"sqlite:///{folder / 'mlflow.db'}", folder))
client = MlflowClient(f"sqlite:///{folder / 'mlflow.db'}")
experiment = client.create_experiment("attnlab-date", artifact_location=(folder / "artifacts" / "attnlab-date").as_uri())
for index in range(int(sys.argv[2])):
    run = client.create_run(experiment)
    client.log_metric(run.info.run_id, "test_exact_match", 0.9)
    client.log_text(run.info.run_id, f"run {index}", "notes.txt")
    client.set_terminated(run.info.run_id)
"""


def store_user(store_dir: Path, go: Path, seed: int, folder: Path) -> multiprocessing.process.BaseProcess:
    """A started process running :func:`use_the_store` on ``store_dir``; its output goes to
    files in ``folder``."""
    arguments = (str(store_dir), str(go), seed, str(folder / f"ready-{seed}"), str(folder / f"out-{seed}.txt"))
    process = preloaded_processes().Process(target=use_the_store, args=arguments)
    process.start()
    return process


def outputs(folder: Path) -> str:
    """What the store users said, the last lines of each."""
    return "\n".join(f"{path.name}: {path.read_text()[-600:]}" for path in sorted(folder.glob("out-*.txt")))


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def cli_process(store_dir: Path, *args: str, cwd: Path, prefix: list[str] = ()) -> subprocess.Popen:
    """``attnlab`` in a process of its own (its own temporary Prefect server) on ``store_dir``."""
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store_dir)}
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.Popen(
        [*prefix, sys.executable, "-m", "attnlab.flows.cli.app", *args],
        env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def all_runs(store_dir: Path) -> list:
    client = client_for(store_dir)
    return client.search_runs([e.experiment_id for e in client.search_experiments()])


def tables(db: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (locks aside) with the sha256 of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "locks" not in path.parts
    }


@pytest.fixture(scope="module")
def made_store(tmp_path_factory) -> Path:
    """A real store with 10 finished runs, each with an artifact, made once per module through
    attnlab's check and MLflow in a process of its own (this one keeps no connection to it)."""
    store_dir = tmp_path_factory.mktemp("made") / "mlflow"
    done = subprocess.run([sys.executable, "-c", WITH_RUNS, str(store_dir), "10"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return store_dir


@pytest.fixture
def store_with_runs(made_store):
    """Puts a copy of :func:`made_store` at the folder given, its runs' files recorded there."""

    def copy(store_dir: Path) -> None:
        shutil.copytree(made_store, store_dir)
        old, new = made_store.as_uri(), store_dir.as_uri()
        with contextlib.closing(sqlite3.connect(store_dir / "mlflow.db")) as db, db:
            db.execute("UPDATE experiments SET artifact_location = replace(artifact_location, ?, ?)", (old, new))
            db.execute("UPDATE runs SET artifact_uri = replace(artifact_uri, ?, ?)", (old, new))

    return copy


def killed_mid_migration(store_dir: Path, after_tables: int = 1) -> None:
    """A fresh store whose creating process died during MLflow's schema migration."""
    store_dir.mkdir(parents=True)
    done = subprocess.run([sys.executable, "-c", KILLED_MID_MIGRATION, str(store_dir), str(after_tables)], capture_output=True)
    assert done.returncode == 137, done.stderr[-2000:]
    assert any(name.startswith("_alembic_tmp_") for name in tables(store_dir / "mlflow.db"))


# --------------------------------------------------------------------------- item 1


@pytest.mark.slow
def test_eight_runs_at_once_on_a_fresh_store_all_finish_then_a_train(capsys, tmp_path, monkeypatch):
    """Eight processes open a store that does not exist yet, at the same moment (each waits for a
    go file once its imports are done, so machine speed does not decide the overlap), and each logs
    a run as ``attnlab train`` does; then a real ``attnlab train`` on the same store."""
    store_dir = tmp_path / "mlflow"
    go = tmp_path / "go"
    processes = [store_user(store_dir, go, seed, tmp_path) for seed in range(8)]
    try:
        while len(list(tmp_path.glob("ready-*"))) < 8:  # the event: all eight are at the start line
            assert all(process.is_alive() for process in processes), outputs(tmp_path)
            time.sleep(0.2)
        go.touch()
        for process in processes:
            process.join()
        codes = [process.exitcode for process in processes]
    finally:
        for process in processes:
            process.kill()
    assert codes == [0] * 8, outputs(tmp_path)
    assert not {name for name in tables(store_dir / "mlflow.db") if name.startswith("_alembic_tmp_")}
    assert sorted(run.info.status for run in all_runs(store_dir)) == ["FINISHED"] * 8

    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 0, err
    assert sum(run.info.status == "FINISHED" for run in all_runs(store_dir) if run.info.run_name != "benchmark-date") == 9


@pytest.mark.slow
def test_a_store_killed_mid_migration_that_holds_nothing_is_rebuilt(capsys, tmp_path, monkeypatch):
    store_dir = tmp_path / "mlflow"
    killed_mid_migration(store_dir, after_tables=3)
    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 0, err
    assert [run.info.status for run in all_runs(store_dir) if run.info.run_name != "benchmark-date"] == ["FINISHED"]
    assert not {name for name in tables(store_dir / "mlflow.db") if name.startswith("_alembic_tmp_")}


def test_a_store_left_mid_migration_that_holds_runs_is_refused_in_one_line(capsys, tmp_path, monkeypatch):
    store_dir = tmp_path / "mlflow"
    killed_mid_migration(store_dir, after_tables=3)
    with contextlib.closing(sqlite3.connect(store_dir / "mlflow.db")) as conn, conn:
        conn.execute("INSERT INTO experiments (experiment_id, name, lifecycle_stage) VALUES (7, 'mine', 'active')")
    before = fingerprint(store_dir)
    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)  # an earlier test's store must not answer
    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 2
    assert_one_line_error(err, f"the MLflow store {store_dir / 'mlflow.db'} holds runs but was left mid-migration",
                          "_alembic_tmp_", "restore mlflow.db from a backup (see 'Backup and restore' in mlflow/README.md)")  # fmt: skip
    assert fingerprint(store_dir) == before


# --------------------------------------------------------------------------- item 2


@pytest.mark.parametrize("damage", ["truncated", "deleted", "garbage", "cut in half"])
def test_a_damaged_store_beside_earlier_runs_is_refused_never_recreated(capsys, tmp_path, monkeypatch, damage, store_with_runs):
    store_dir = tmp_path / "mlflow"
    store_with_runs(store_dir)
    db = store_dir / "mlflow.db"
    if damage == "deleted":
        db.unlink()
    elif damage == "cut in half":
        os.truncate(db, db.stat().st_size // 2)
    else:
        db.write_bytes(b"" if damage == "truncated" else b"not a database at all\n" * 50)
    before = fingerprint(store_dir)
    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 2 and out == ""
    what = {"truncated": "is empty (0 bytes) but", "deleted": "is missing but", "garbage": "is not a readable SQLite database",
            "cut in half": "is not a readable SQLite database (database disk image is malformed)"}[damage]  # fmt: skip
    assert_one_line_error(
        err, f"the MLflow store {db} {what}", "restore mlflow.db from a backup (see 'Backup and restore' in mlflow/README.md)"
    )
    assert fingerprint(store_dir) == before  # nothing re-created, no artifact touched


def test_an_empty_store_file_without_artifacts_is_simply_created(tmp_path):
    from attnlab.flows.tracking.store import Store, check_store

    store_dir = tmp_path / "mlflow"
    store_dir.mkdir()
    (store_dir / "mlflow.db").touch()
    check_store(Store(f"sqlite:///{store_dir / 'mlflow.db'}", store_dir))
    assert "runs" in tables(store_dir / "mlflow.db")


#: Run in a child process: a write transaction on the database at argv[1], large enough to write
#: pages into the file before it commits (so its journal is hot), cut by the process dying at once.
KILLED_MID_TRANSACTION = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE scratch (text)")
conn.executemany("INSERT INTO scratch VALUES (?)", [("x" * 100,)] * 20000)
os._exit(137)
"""


def test_a_writer_killed_mid_transaction_is_rolled_back_and_the_next_train_runs(capsys, tmp_path, monkeypatch, store_with_runs):
    store_dir = tmp_path / "mlflow"
    store_with_runs(store_dir)
    before = {(run.info.run_id, run.info.status) for run in all_runs(store_dir)}
    done = subprocess.run([sys.executable, "-c", KILLED_MID_TRANSACTION, str(store_dir / "mlflow.db")], capture_output=True)
    assert done.returncode == 137, done.stderr[-2000:]
    assert (store_dir / "mlflow.db-journal").stat().st_size > 0  # hot: a read-only open refuses it
    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 0, err
    assert "scratch" not in tables(store_dir / "mlflow.db")  # the cut transaction is undone, nothing else
    after = {(run.info.run_id, run.info.status) for run in all_runs(store_dir) if run.info.run_name != "benchmark-date"}
    assert before < after and len(after) == len(before) + 1 and {status for _, status in after} == {"FINISHED"}


# --------------------------------------------------------------------------- item 8 (the store)


def _can(command: list[str]) -> bool:
    return shutil.which(command[0]) is not None and subprocess.run(command, capture_output=True).returncode == 0


def test_a_read_only_store_is_one_line_and_left_unchanged(tmp_path, store_with_runs):
    """Read-only for root too: the store folder is bind-mounted read-only onto itself in a private
    mount namespace of the command (root ignores file modes, so chmod would prove nothing)."""
    if not _can(["unshare", "--mount", "--propagation", "private", "true"]):
        pytest.skip("needs unshare --mount (root, CAP_SYS_ADMIN) to make a read-only bind mount")
    store_dir = tmp_path / "mlflow"
    store_with_runs(store_dir)
    before, runs_before = fingerprint(store_dir), len(all_runs(store_dir))
    mount_ro = f'mount --bind {store_dir} {store_dir} && mount -o remount,bind,ro {store_dir} && exec "$@"'
    prefix = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount_ro, "sh"]
    process = cli_process(store_dir, "train", *TINY_ARGS, cwd=tmp_path, prefix=prefix)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 2, err[-3000:]
    assert_one_line_error(
        err, f"the MLflow store {store_dir} is read-only", "make it writable, or point ATTNLAB_MLFLOW_DIR at a writable folder"
    )
    assert fingerprint(store_dir) == before and len(all_runs(store_dir)) == runs_before


def test_a_full_disk_is_one_line_before_a_run_starts(capsys, tmp_path, monkeypatch, store_with_runs):
    """A 48 MiB tmpfs holding a real store and a file filling it."""
    with small_tmpfs(tmp_path / "disk", "48m") as disk:
        store_dir = disk / "mlflow"
        store_with_runs(store_dir)
        fill(disk)
        before, runs_before = fingerprint(store_dir), len(all_runs(store_dir))
        monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        code, out, err = attnlab(capsys, "train", *TINY_ARGS)
        assert code == 2
        assert_one_line_error(err, f"the disk of the MLflow store {store_dir} is full", "free some space")
        assert fingerprint(store_dir) == before and len(all_runs(store_dir)) == runs_before


def read_only(store_dir: Path) -> list[str]:
    """A command prefix that runs it with ``store_dir`` bind-mounted read-only onto itself in a
    private mount namespace (read-only for root too); skips the test where that is impossible."""
    if not _can(["unshare", "--mount", "--propagation", "private", "true"]):
        pytest.skip("needs unshare --mount (root, CAP_SYS_ADMIN) to make a read-only bind mount")
    mount_ro = f'mount --bind {store_dir} {store_dir} && mount -o remount,bind,ro {store_dir} && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount_ro, "sh"]


def test_a_read_only_store_serves_predict_and_runs(capsys, learned_store, tmp_path, monkeypatch):
    """Predicting and listing only read: loading the champion writes nothing into the store. On a
    copy of the learned store made its own (`store relocate`): the shared one is read by tests on
    other workers meanwhile, and MLflow itself writes into a store it loads a model from."""
    from _flowkit import KNOWN_DATES
    from test_store_relocation import copied

    _, store_dir = copied(learned_store, tmp_path, monkeypatch)
    assert attnlab(capsys, "store", "relocate")[0] == 0
    before = fingerprint(store_dir)
    date, answer = next(iter(KNOWN_DATES.items()))
    predict = cli_process(store_dir, "predict", date, cwd=tmp_path, prefix=read_only(store_dir))
    runs = cli_process(store_dir, "runs", cwd=tmp_path, prefix=read_only(store_dir))
    (out, err), (listed, runs_err) = predict.communicate(timeout=300), runs.communicate(timeout=300)
    assert (predict.returncode, out) == (0, f"{date} -> {answer}\n"), err[-3000:]
    assert runs.returncode == 0 and "FINISHED" in listed, runs_err[-3000:]
    assert fingerprint(store_dir) == before


@pytest.mark.parametrize("command", [["predict", "25-12-2023"], ["runs"], ["store", "relocate"]])
def test_a_deleted_database_beside_earlier_runs_is_said_as_train_says_it(capsys, tmp_path, monkeypatch, command, store_with_runs):
    store_dir = tmp_path / "mlflow"
    store_with_runs(store_dir)
    (store_dir / "mlflow.db").unlink()
    before = fingerprint(store_dir)
    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out, err = attnlab(capsys, *command)
    assert code == 2 and out == ""
    assert_one_line_error(err, f"the MLflow store {store_dir / 'mlflow.db'} is missing but {store_dir / 'artifacts'} holds the files of earlier runs",
                          "restore mlflow.db from a backup (see 'Backup and restore' in mlflow/README.md)")  # fmt: skip
    assert fingerprint(store_dir) == before


def test_a_champion_whose_files_are_gone_is_named_with_where_they_were(capsys, learned_store, tmp_path, monkeypatch):
    from test_store_relocation import champion_folder, copied

    _, copy = copied(learned_store, tmp_path, monkeypatch)
    assert attnlab(capsys, "store", "relocate")[0] == 0
    gone = champion_folder(copy)
    shutil.rmtree(gone)
    for args in (["predict", "25-12-2023"], ["predict", "--model", "models:/attnlab-date/1", "25-12-2023"]):
        code, out, err = attnlab(capsys, *args)
        assert code == 2 and out == "", err
        assert_one_line_error(err, "the files of model version 1 of 'attnlab-date'", f"are missing: {gone} does not exist",
                              "restore the store's artifacts/ from a backup")  # fmt: skip
