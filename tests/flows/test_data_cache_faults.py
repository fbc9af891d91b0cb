"""The data cache under faults, through the ``attnlab train`` command (run in-process, as the CLI
tests run it): a cached data file cut in half, emptied (valid, checksummed, but with empty splits)
or swapped for another data set's file is discarded and generated again, with one line saying so,
and the run trains on its own data."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest
from _flowkit import client_for, is_progress_line

from attnlab.flows.cli import app as cli

OPTIONS = ["--epochs", "1", "--train-size", "200", "--hidden-size", "16", "--embedding-dim", "8",
           "-o", "validation_size=30", "-o", "test_size=30", "-o", "explain_examples=0", "--json"]  # fmt: skip


def train(world: Path, seed: int) -> tuple[str, list[str]]:
    """``attnlab train`` of seed ``seed`` on the store and cache of ``world``; (its run id, its
    stderr lines). Fails the test unless it exits 0."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        patch.setenv("ATTNLAB_MLFLOW_DIR", str(world / "mlflow"))
        patch.setenv("ATTNLAB_CACHE_DIR", str(world / "cache"))
        patch.chdir(world)
        code = cli.main(["train", *OPTIONS, "--seed", str(seed)])
    assert code == 0, err.getvalue()
    assert "Traceback" not in err.getvalue()
    return json.loads(out.getvalue())["run_id"], err.getvalue().splitlines()


def trained_on(world: Path, run_id: str) -> set[tuple[str, str]]:
    """(split, digest) of every data split the run logged as an MLflow dataset input."""
    inputs = client_for(world / "mlflow").get_run(run_id).inputs.dataset_inputs
    return {(entry.tags[0].value, entry.dataset.digest) for entry in inputs if entry.tags[0].value != "source"}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A store and a cache holding the data of seeds 0 and 1, each from a first run after the one
    that drew the registered model's benchmark (data is keyed by the benchmark it leaves out);
    (folder, {seed: (its data file, what its first run trained on)})."""
    folder = tmp_path_factory.mktemp("cache-faults")
    train(folder, 2)
    files = {}
    for seed in (0, 1):
        before = set((folder / "cache" / "datasets").glob("*.json"))
        run_id, _ = train(folder, seed)
        (written,) = set((folder / "cache" / "datasets").glob("*.json")) - before
        files[seed] = (written, trained_on(folder, run_id))
    return folder, files


def cut_in_half(path: Path, other: Path) -> None:
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])


def empty_splits(path: Path, other: Path) -> None:
    """Splits emptied, the file otherwise as the cache writes it: its own key, a good checksum."""
    from attnlab.data.datasets import checksum

    entry = json.loads(path.read_text())
    entry["splits"] = {name: [] for name in entry["splits"]}
    entry["sha256"] = checksum(json.dumps(entry["splits"], ensure_ascii=False))
    path.write_text(json.dumps(entry))


def swap(path: Path, other: Path) -> None:
    shutil.copyfile(other, path)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("damage", "told"),
    [
        (cut_in_half, "is not valid JSON, cut short or damaged ("),
        (empty_splits, "has empty train, validation and test splits"),
        (swap, "holds the data of another key ("),
    ],
    ids=["cut-in-half", "empty-splits", "swapped"],
)
def test_a_damaged_cache_file_is_generated_again_in_one_line_and_the_run_trains_on_its_data(world, damage, told):
    from attnlab.data.datasets import entry_problem

    folder, files = world
    (path, first_data), (other, _) = files[0], files[1]
    damage(path, other)
    run_id, lines = train(folder, 0)
    notices = [line for line in lines if line.startswith("the data cache file ")]
    assert len(notices) == 1, lines
    assert notices[0].startswith(f"the data cache file {path} {told}") and notices[0].endswith(": generating the data again")
    assert all(is_progress_line(line) or line.startswith("the data cache file ") for line in lines), lines
    assert trained_on(folder, run_id) == first_data  # seed 0's data, as its first run had
    key = json.loads(path.read_text())["key"]
    assert entry_problem(path, key) is None  # the file is whole again
