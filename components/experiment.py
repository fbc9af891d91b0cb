"""One experiment end to end, without any orchestration: data, model, training, evaluation.

Flows run these same steps as separate tasks; this module is the plain-Python path used by
tests, benchmarks and notebooks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attnlab.config import ExperimentConfig
from attnlab.data import Splits, encode_examples, make_splits
from attnlab.evaluate import Evaluation, evaluate
from attnlab.model import Seq2Seq, build_model, build_task
from attnlab.plugins import Task
from attnlab.train import EpochCallback, TrainResult, train


@dataclass
class ExperimentResult:
    """Everything one run produced."""

    config: ExperimentConfig
    task: Task
    splits: Splits
    model: Seq2Seq
    training: TrainResult
    evaluation: Evaluation


def prepare_data(config: ExperimentConfig) -> tuple[Task, Splits]:
    """The configured task and its train/validation/test splits (disjoint by value)."""
    task = build_task(config)
    test_task = build_task(config, split="test") if config.test_task_options else None
    sizes = (config.train_size, config.validation_size, config.test_size)
    return task, make_splits(task, sizes, config.seed, test_task)


def train_model(
    config: ExperimentConfig,
    task: Task,
    splits: Splits,
    on_epoch: EpochCallback | None = None,
    checkpoint: Path | None = None,
) -> tuple[Seq2Seq, TrainResult]:
    """Build the configured model on its device and train it on ``splits``."""
    model = build_model(config, task).to(config.torch_device())
    encode = lambda examples: encode_examples(examples, model.src_vocab, model.tgt_vocab)  # noqa: E731
    result = train(model, encode(splits.train), encode(splits.validation), config, on_epoch=on_epoch, checkpoint=checkpoint)
    return model, result


def run_experiment(
    config: ExperimentConfig, on_epoch: EpochCallback | None = None, checkpoint: Path | None = None
) -> ExperimentResult:
    """Prepare data, train, and evaluate on the held-out test split."""
    task, splits = prepare_data(config)
    model, training = train_model(config, task, splits, on_epoch, checkpoint)
    evaluation = evaluate(model, splits.test, beam_size=config.beam_size)
    return ExperimentResult(config, task, splits, model, training, evaluation)
