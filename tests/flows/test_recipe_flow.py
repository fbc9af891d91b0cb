"""The training recipe through the real train flow and the embedded store: with ``checkpoint: best``
the best epoch's weights, not the last, are evaluated, registered and promoted, say so in the run
and the summary, and survive ``attnlab train --resume``. Validation is scripted to peak before the
last epoch; everything else (training, the flow, MLflow, the CLI) is real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from _flowkit import TINY, client_for

from attnlab.flows.cli import app as cli
from attnlab.training import loop

pytestmark = pytest.mark.slow


class ScriptedValidation:
    """Stands in for :func:`attnlab.training.loop.validation_metrics`: answers the exact matches of
    ``scores`` in turn and records the model's weights at each call; ``interrupt_at`` (a call's
    index) raises KeyboardInterrupt there instead, as Ctrl-C would during that validation."""

    def __init__(self, scores: list[float], interrupt_at: int | None = None):
        self.scores, self.interrupt_at = list(scores), interrupt_at
        self.weights: list[dict[str, torch.Tensor]] = []

    def __call__(self, model, data, max_length=None) -> dict[str, float]:
        if len(self.weights) == self.interrupt_at:
            self.interrupt_at = None
            raise KeyboardInterrupt
        self.weights.append({key: value.detach().clone() for key, value in model.state_dict().items()})
        score = self.scores.pop(0)
        return {"val_loss": 1.0 - score, "val_exact_match": score}


def registered_weights(store: Path, version: str) -> dict[str, torch.Tensor]:
    """The weights of version ``version`` of attnlab-date, read from its bundle in the store."""
    import mlflow
    from attnlab.model.bundle import load_bundle

    mlflow.set_tracking_uri(f"sqlite:///{store / 'mlflow.db'}")
    folder = Path(mlflow.artifacts.download_artifacts(f"models:/attnlab-date/{version}"))
    return load_bundle(folder / "artifacts" / "bundle")[2].state_dict()


def same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def options(**fields) -> list[str]:
    return [f"-o{key}={value}" for key, value in {**TINY, "target_exact_match": "null", **fields}.items()]


def test_the_best_epoch_is_registered_and_said(capsys, empty_store, monkeypatch):
    validation = ScriptedValidation([0.1, 0.5, 0.3])
    monkeypatch.setattr(loop, "validation_metrics", validation)
    code = cli.main(["train", *options(epochs=3, checkpoint="best")])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("weights: epoch 2 of 3, the best (highest validation exact match, ties broken by lower validation loss)")
    run_id = lines[0].split()[1]
    client = client_for(empty_store)
    run = client.get_run(run_id)
    assert run.data.metrics["selected_epoch"] == 2 and run.data.metrics["selected_val_exact_match"] == 0.5
    assert run.data.params["checkpoint"] == "best"
    assert run.data.tags["attnlab.selection"] == lines[1].removeprefix("weights: ")
    version = client.get_model_version("attnlab-date", "1")
    assert version.run_id == run_id and version.tags["selected_epoch"] == "2"
    assert same(registered_weights(empty_store, "1"), validation.weights[1])
    assert not same(validation.weights[1], validation.weights[2])


def test_the_best_weights_survive_a_resume(capsys, empty_store, monkeypatch):
    """Ctrl-C during epoch 3's validation (epoch 2, the best, checkpointed); resumed, epochs 3 and
    4 validate worse: the run registers epoch 2's weights."""
    first = ScriptedValidation([0.1, 0.5], interrupt_at=2)
    monkeypatch.setattr(loop, "validation_metrics", first)
    code = cli.main(["train", *options(epochs=4, checkpoint="best")])
    _, err = capsys.readouterr()
    assert code == 130, err
    client = client_for(empty_store)
    (run,) = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id])
    assert run.info.status == "KILLED"

    monkeypatch.setattr(loop, "validation_metrics", ScriptedValidation([0.3, 0.2]))
    code = cli.main(["train", "--resume", run.info.run_id, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads(out)
    assert summary["selection"]["selected_epoch"] == 2 and summary["epochs"] == 4
    assert client.get_run(run.info.run_id).data.metrics["selected_epoch"] == 2
    assert client.get_model_version("attnlab-date", summary["model"]["version"]).tags["selected_epoch"] == "2"
    assert same(registered_weights(empty_store, summary["model"]["version"]), first.weights[1])
