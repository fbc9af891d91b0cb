"""English pronunciation end to end: a small cmudict model trained, registered and asked for
phonemes from the command line, as docs/real-data.md shows."""

from __future__ import annotations

import json

import pytest
from _flowkit import assert_one_line_error, client_for, point_at

from attnlab.flows.cli.app import main
from attnlab.plugins.builtin.cmudict_task import PHONEMES

SMALL = ["--task", "cmudict", "--train-size", "1500", "-o", "validation_size=100", "-o", "test_size=200", "--epochs", "1",
         "--hidden-size", "32", "-o", "embedding_dim=16", "-o", "explain_examples=0"]  # fmt: skip


@pytest.fixture(scope="module")
def trained(tmp_path_factory, prefect_harness):
    """The store folder of one small cmudict run, registered as the champion."""
    folder = tmp_path_factory.mktemp("cmudict") / "mlflow"
    with pytest.MonkeyPatch.context() as patch:
        point_at(folder, patch)
        assert main(["train", *SMALL]) == 0
    return folder


@pytest.mark.slow
def test_a_cmudict_run_logs_phoneme_error_rates_and_one_row_per_word(trained):
    client = client_for(trained)
    runs = client.search_runs([client.get_experiment_by_name("attnlab-cmudict").experiment_id])
    [run] = [run for run in runs if run.info.run_name != "benchmark-cmudict"]
    metrics = run.data.metrics
    assert 0 < metrics["test_token_error_rate"] and 0 <= metrics["test_sequence_error_rate"] <= 1
    assert metrics["test_exact_match"] == pytest.approx(1 - metrics["test_sequence_error_rate"])
    with open(client.download_artifacts(run.info.run_id, "tables/predictions.json")) as table:
        frame = json.load(table)
    words = [row[frame["columns"].index("source")] for row in frame["data"]]
    assert len(words) == len(set(words)) == 200  # --test-size counts words; a word's pronunciations are one row


@pytest.mark.slow
def test_the_served_model_answers_phonemes(trained, monkeypatch):
    import mlflow.pyfunc
    import pandas as pd

    point_at(trained, monkeypatch)
    model = mlflow.pyfunc.load_model("models:/attnlab-cmudict@champion")
    answers = model.predict(pd.DataFrame({"source": ["pace", "attention"]}))
    assert len(answers) == 2 and all(answer and set(answer.split()) <= set(PHONEMES) for answer in answers), answers


@pytest.mark.slow
def test_predict_prints_phonemes_and_refuses_a_foreign_character(trained, monkeypatch, capsys):
    point_at(trained, monkeypatch)
    capsys.readouterr()
    assert main(["predict", "--task", "cmudict", "hello", "world"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [line.split(" -> ")[0] for line in lines] == ["hello", "world"], out
    assert all(set(line.split(" -> ")[1].split()) <= set(PHONEMES) for line in lines), out
    assert main(["predict", "--task", "cmudict", "h3llo"]) == 2
    _, err = capsys.readouterr()
    assert_one_line_error(err, "'h3llo'", "character(s) '3'")
