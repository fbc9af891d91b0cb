"""Training on your own file end to end: the file logged as the run's dataset (path and digest),
its data cached by the file's digest (a grown file is new data), and a bad file refused in one
line before anything starts."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from _flowkit import assert_one_line_error, client_for, point_at, spelled_words

from attnlab.flows.cli.app import main


def train(path, capsys, *extra: str) -> tuple[int, str]:
    code = main(["train", "--task", "pairs", f"-otask.path={path}", "-otask.source_column=word", "-otask.target_column=spelled",
                 "-otask.target_tokenization=whitespace", "-otest_size=60", "-ovalidation_size=40", "--train-size", "200",
                 "--epochs", "1", "--hidden-size", "16", "-oembedding_dim=8", "-oexplain_examples=0", *extra])  # fmt: skip
    return code, capsys.readouterr().err


def source_inputs(client, run_id: str) -> list:
    return [d.dataset for d in client.get_run(run_id).inputs.dataset_inputs if d.tags[0].value == "source"]


def split_words(client, run_id: str) -> pd.DataFrame:
    """The run's logged splits: columns split, source, target."""
    return pd.read_csv(client.download_artifacts(run_id, "data/splits.csv"), keep_default_na=False)


@pytest.mark.slow
def test_a_run_on_a_file_logs_it_and_a_grown_file_is_new_data(tmp_path, monkeypatch, capsys, prefect_harness):
    store = point_at(tmp_path / "mlflow", monkeypatch)
    path = tmp_path / "words.csv"
    path.write_text(spelled_words(300))
    assert train(path, capsys)[0] == 0
    client = client_for(store)
    [first] = [
        r
        for r in client.search_runs([client.get_experiment_by_name("attnlab-pairs-words").experiment_id])
        if r.info.run_name != "benchmark-pairs"
    ]
    [dataset] = source_inputs(client, first.info.run_id)
    assert dataset.name == "words.csv" and path.as_uri() in dataset.source
    assert dataset.digest == hashlib.sha256(path.read_bytes()).hexdigest()[:36]
    old = split_words(client, first.info.run_id)
    assert list(old["split"].value_counts().sort_index()) == [60, 200, 40]

    old_words = set(pd.read_csv(path)["word"])
    path.write_text(spelled_words(500))  # the same options on more words: the cached split of the old file must not be reused
    assert train(path, capsys)[0] == 0
    runs = [r for r in client.search_runs([first.info.experiment_id]) if r.info.run_name != "benchmark-pairs"]
    second = next(r for r in runs if r.info.run_id != first.info.run_id)
    assert source_inputs(client, second.info.run_id)[0].digest == hashlib.sha256(path.read_bytes()).hexdigest()[:36]
    new = split_words(client, second.info.run_id)
    assert set(new["source"]) - old_words  # words only the grown file has

    # A test file of its own, named relative to where the command runs: the test split is its
    # first 60 words, none of its words trains, and both files are the run's datasets.
    held = pd.read_csv(path).tail(80)
    held.to_csv(tmp_path / "held.csv", index=False)
    monkeypatch.chdir(tmp_path)
    assert train(path, capsys, "-otask.test_path=held.csv")[0] == 0
    third = client.search_runs([first.info.experiment_id], "params.task_options LIKE '%test_path%'")[0]
    logged = split_words(client, third.info.run_id)
    assert list(logged[logged["split"] == "test"]["source"]) == list(held["word"][:60])
    assert not set(logged[logged["split"] == "train"]["source"]) & set(held["word"])
    contexts = {
        d.tags[0].value: d.dataset.name for d in client.get_run(third.info.run_id).inputs.dataset_inputs if "source" in d.tags[0].value
    }
    assert contexts == {"source": "words.csv", "test source": "held.csv"}
    assert str(tmp_path / "held.csv") in third.data.params["task_options"]  # made absolute


@pytest.mark.parametrize(
    ("content", "needles"),
    [
        (None, ["task 'pairs':", "does not exist"]),
        ("word,sound\nab,AY BEE\n", ["has no column 'spelled'; its columns: 'word', 'sound'"]),
        ("word,spelled\nab,AY BEE\n,BEE\n", ["1 row(s) have an empty source (the first: row 2)"]),
    ],
)
def test_a_bad_file_is_one_line_and_exit_2_before_anything_starts(tmp_path, monkeypatch, capsys, content, needles):
    store = point_at(tmp_path / "mlflow", monkeypatch)
    path = tmp_path / "words.csv"
    if content is not None:
        path.write_text(content)
    code, err = train(path, capsys)
    assert code == 2
    assert_one_line_error(err, *needles)
    assert not (store / "mlflow.db").exists()


def test_a_symbolic_link_loop_is_one_line_in_train_and_sweep(tmp_path, monkeypatch, capsys):
    store = point_at(tmp_path / "mlflow", monkeypatch)
    loop = tmp_path / "words.csv"
    loop.symlink_to(tmp_path / "other.csv")
    (tmp_path / "other.csv").symlink_to(loop)
    code, err = train(loop, capsys)
    assert code == 2
    assert_one_line_error(err, f"{loop} cannot be read: its symbolic links form a loop")
    code = main(["sweep", "--task", "pairs", f"-otask.path={loop}", "--scorer", "dot,additive"])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "its symbolic links form a loop")
    assert not (store / "mlflow.db").exists()


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="drops root's file capabilities with setpriv")
def test_an_unreadable_file_is_one_line_and_exit_2_even_for_root_without_its_file_capabilities(tmp_path):
    """Root reads any file; without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (dropped from the
    command's bounding set) it meets the file's mode 000 as any user would."""
    path = tmp_path / "words.csv"
    path.write_text(spelled_words(50))
    path.chmod(0)
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(tmp_path / "mlflow")}
    command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", str(Path(sys.executable).with_name("attnlab")), "train",
               "--task", "pairs", f"-otask.path={path}", "-otask.source_column=word", "-otask.target_column=spelled"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr
    assert_one_line_error(done.stderr, f"{path} cannot be read: Permission denied")
