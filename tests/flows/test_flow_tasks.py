"""Task bodies and tracking helpers on their own (no flow run, no MLflow store)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from prefect.states import Failed

from attnlab.data.examples import pick_examples, sample_predictions
from attnlab.evaluation.metrics import Evaluation
from attnlab.flows.pyfunc import source_texts
from attnlab.flows.run import steps as tasks
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking.errors import TrackingUnavailable
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.bundle import save_bundle

SOURCES, TARGETS = ["01-02-2003", "28-12-2029"], ["2003年02月01日", "2029年12月28日"]


def _bundle(tmp_path: Path, scorer: str) -> Path:
    config = ExperimentConfig(scorer=scorer, hidden_size=16, embedding_dim=8)
    return save_bundle(tmp_path / scorer, config, build_model(config, build_task(config)))


def test_plot_attention_draws_every_head_of_a_multihead_model(tmp_path):
    out = tasks.plot_attention.fn(_bundle(tmp_path, "multihead"), SOURCES, TARGETS, tmp_path / "plots")
    assert sorted(p.name for p in out.glob("*.png")) == ["example_0.png", "example_0_heads.png", "example_1.png", "example_1_heads.png"]
    records = json.loads((out / "weights.json").read_text())
    assert [r["source"] for r in records] == SOURCES and [r["target"] for r in records] == TARGETS
    heads = records[0]["head_weights"]
    assert len(heads) == 4 and len(heads[0]) == len(records[0]["output_tokens"])


def test_plot_attention_records_the_gold_of_test_examples(tmp_path):
    from attnlab.data.datasets import save_splits
    from attnlab.data.splits import Splits
    from attnlab.plugins import Example

    gold = ((6,), (7,), (8,), (9,), (), (3,), (4,), (), (0,), (1,), ())
    test = [Example(SOURCES[0], TARGETS[0], gold)]  # SOURCES[1] is not a test example
    data = save_splits(tmp_path / "data.json", Splits(train=[], validation=[], test=test))
    out = tasks.plot_attention.fn(_bundle(tmp_path, "dot"), SOURCES, TARGETS, tmp_path / "plots", data)
    records = json.loads((out / "weights.json").read_text())
    assert records[0]["gold"] == [list(step) for step in gold] and records[1]["gold"] is None
    without = tasks.plot_attention.fn(_bundle(tmp_path, "dot"), SOURCES, TARGETS, tmp_path / "again")
    assert [r["gold"] for r in json.loads((without / "weights.json").read_text())] == [None, None]


def test_plot_attention_without_attention_keeps_the_records(tmp_path):
    out = tasks.plot_attention.fn(_bundle(tmp_path, "none"), SOURCES, TARGETS, tmp_path / "plots")
    assert list(out.glob("*.png")) == []
    assert [r["weights"] for r in json.loads((out / "weights.json").read_text())] == [None, None]


def _evaluation(correct: list[bool]) -> Evaluation:
    frame = pd.DataFrame(
        {"source": [f"s{i}" for i in range(len(correct))], "target": "t", "prediction": "p", "correct": correct, "source_length": 2}
    )
    return Evaluation({"exact_match": 0.5, "alignment_accuracy": math.nan}, pd.DataFrame(), frame)


def test_examples_and_tables_put_wrong_predictions_first():
    evaluation = _evaluation([True, False, True, True, False, False])
    assert pick_examples(evaluation.predictions, 4) == (["s1", "s4", "s0", "s2"], ["t"] * 4)
    sample = sample_predictions(evaluation.predictions, rows=4)
    assert list(sample["source"]) == ["s1", "s4", "s5", "s0"]
    assert tracking.evaluation_metrics(evaluation) == {"test_exact_match": 0.5}  # NaN left out


@pytest.mark.parametrize(
    "exc, retried",
    [
        (OSError("disk"), True),
        (ConnectionError("reset"), True),
        (MlflowException("db locked"), True),  # INTERNAL_ERROR
        (MlflowException("bad", error_code=INVALID_PARAMETER_VALUE), False),
        (TrackingUnavailable("down"), False),
        (KeyError("bug"), False),
    ],
)
def test_only_transient_failures_are_retried(exc, retried):
    assert tasks.transient(None, None, Failed(data=exc)) is retried


def test_pyfunc_inputs():
    assert source_texts(pd.DataFrame({"source": ["a", "b"], "other": [1, 2]})) == ["a", "b"]
    assert source_texts(pd.DataFrame({0: ["a"]})) == ["a"]  # what pandas makes of {"inputs": ["a"]}
    assert source_texts(["a", "b"]) == ["a", "b"]
    for columns in ({"text": ["a"]}, {"x": [1], "y": [2]}):  # a lone column of another name too: the docs say so
        with pytest.raises(ValueError, match="expected a 'source' column"):
            source_texts(pd.DataFrame(columns))


def test_epoch_line():
    line = tasks.epoch_line(
        {"epoch": 2, "train_loss": 0.5, "val_loss": 0.25, "val_exact_match": 0.9, "seconds": 1.5, "samples_per_second": 2000.0}, 20
    )
    assert line == "epoch   2/20  train_loss 0.5000  val_loss 0.2500  val_exact_match 0.9000  1.5 s (2,000 samples/s)"
