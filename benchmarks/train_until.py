"""Train until a test set reaches a target exact match: the measurement both time-to-accuracy
benchmarks (bench_training.py, bench_time_to_accuracy.py) make."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attnlab.data.splits import Splits, encode_examples
from attnlab.evaluation.metrics import decode_texts, exact_match
from attnlab.lab.config import ExperimentConfig
from attnlab.plugins import Example
from attnlab.training.loop import train


class _Reached(Exception):
    pass


def train_until(
    model, splits: Splits, config: ExperimentConfig, test: list[Example], target: float, score: Callable[[Any], float] | None = None
) -> dict:
    """Train ``model`` on ``splits`` under ``config``, scoring greedy exact match on ``test`` after
    every epoch (or ``score(model)``, higher is better), until it reaches ``target`` or the epochs
    run out: ``train`` (optimisation seconds), ``wall`` (epoch seconds, validation included),
    ``epoch``, ``score``, ``reached``."""
    encode = lambda examples: encode_examples(examples, model.src_vocab, model.tgt_vocab)  # noqa: E731
    test_data, targets = encode(test), [ex.target for ex in test]
    seen = {"train": 0.0, "wall": 0.0, "epoch": 0, "score": 0.0}

    def after_epoch(metrics: dict) -> None:
        seen["train"] += metrics["train_seconds"]
        seen["wall"] += metrics["seconds"]
        seen["epoch"] = int(metrics["epoch"])
        model.eval()
        seen["score"] = score(model) if score is not None else exact_match(decode_texts(model, test_data), targets)
        if seen["score"] >= target:
            raise _Reached

    try:
        train(model, encode(splits.train), encode(splits.validation), config, on_epoch=after_epoch)
    except _Reached:
        return {**seen, "reached": True}
    return {**seen, "reached": False}
