"""A copied store keeps to its own folder: refused until relocated, then it trains and predicts
without touching the original."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

from _flowkit import KNOWN_DATES, TINY, assert_one_line_error, point_at
from test_store_integrity import attnlab, fingerprint

TINY_ARGS = [f"-o{key}={value}" for key, value in {**TINY, "epochs": 1}.items()]


def copied(learned_store, tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """(original, copy): the learned store copied as ``cp -a`` does, the copy made this process's
    store."""
    original = learned_store[0]
    copy = tmp_path / "elsewhere" / "mlflow"
    shutil.copytree(original, copy, symlinks=True)
    return original, point_at(copy, monkeypatch)


def champion_folder(store_dir: Path) -> Path:
    """Where the store records the files of its champion."""
    from attnlab.ops.store_locations import local_path

    with closing(sqlite3.connect(store_dir / "mlflow.db")) as conn:
        (location,) = conn.execute(
            "SELECT mv.storage_location FROM registered_model_aliases AS a JOIN model_versions AS mv "
            "ON mv.name = a.name AND mv.version = a.version WHERE a.alias = 'champion'"
        ).fetchone()
    return Path(local_path(location))


def test_a_copied_store_is_refused_until_relocated_then_leaves_the_original_untouched(capsys, learned_store, tmp_path, monkeypatch):
    original, copy = copied(learned_store, tmp_path, monkeypatch)
    before = fingerprint(original)

    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 2 and out == ""
    assert_one_line_error(err, f"the MLflow store {copy} records its files under {original}", "run 'attnlab store relocate'")

    code, out, err = attnlab(capsys, "store", "relocate")
    assert code == 0, err
    assert out.startswith(f"relocated the MLflow store {copy} from {original}: experiments.artifact_location ")
    assert champion_folder(copy).is_relative_to(copy)

    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 0, err
    date, answer = next(iter(KNOWN_DATES.items()))
    code, out, err = attnlab(capsys, "predict", date)
    assert (code, out) == (0, f"{date} -> {answer}\n"), err
    assert fingerprint(original) == before  # not one byte written, changed or added there

    code, out, err = attnlab(capsys, "store", "relocate")
    assert (code, out) == (0, f"the MLflow store {copy} keeps its files in {copy / 'artifacts'}; nothing to relocate\n"), err


def test_relocate_without_a_store_is_one_line(capsys, tmp_path, monkeypatch):
    point_at(tmp_path / "nothing", monkeypatch)
    code, out, err = attnlab(capsys, "store", "relocate")
    assert code == 2 and out == ""
    assert_one_line_error(err, f"no MLflow store at {tmp_path / 'nothing'} to relocate", "ATTNLAB_MLFLOW_DIR")
