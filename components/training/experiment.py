"""One experiment end to end, without any orchestration: data, model, training, evaluation.

Flows run these same steps as separate tasks; this module is the plain-Python path used by
tests, benchmarks and notebooks. :func:`run_experiment` says how training goes on the
``attnlab.progress`` logger: a line per epoch and, inside an epoch, a line every 10 s or at each
quarter (:class:`attnlab.training.progress.PeriodicLines`). Silence it with
``logging.getLogger("attnlab.progress").setLevel(logging.WARNING)``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from attnlab.data.splits import EncodedExamples, Splits, encode_examples, make_splits, split_sizes
from attnlab.evaluation.metrics import Evaluation, evaluate
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq, build_model
from attnlab.model.task_choice import build_tasks
from attnlab.plugins import Example, Task
from attnlab.training.loop import EpochCallback, TrainResult, train
from attnlab.training.progress import PROGRESS_LOGGER, PeriodicLines, StepCallback, StepProgress, epoch_line, step_line


@dataclass
class ExperimentResult:
    """Everything one run produced."""

    config: ExperimentConfig
    task: Task
    splits: Splits
    model: Seq2Seq
    training: TrainResult
    evaluation: Evaluation


def prepare_data(config: ExperimentConfig, benchmark: AbstractSet[str] = frozenset()) -> tuple[Task, Splits]:
    """The configured task and its train/validation/test splits (disjoint by value), none of the
    keys of ``benchmark`` (a registered model's benchmark set) in training or validation."""
    task, test_task = build_tasks(config)
    sizes = split_sizes(task, (config.train_size, config.validation_size, config.test_size))
    return task, make_splits(task, sizes, config.seed, test_task, benchmark)


def train_model(
    config: ExperimentConfig,
    task: Task,
    splits: Splits,
    on_epoch: EpochCallback | None = None,
    checkpoint: Path | None = None,
    on_step: StepCallback | None = None,
    on_model: Callable[[Seq2Seq], None] | None = None,
) -> tuple[Seq2Seq, TrainResult]:
    """Build the configured model on its device and train it on ``splits``. ``on_model`` is
    handed the model once built, before training (e.g. to look at it after every epoch, as
    :class:`attnlab.viz.explorer_data.SnapshotRecorder` does)."""
    model = build_model(config, task).to(config.torch_device())
    if on_model is not None:
        on_model(model)

    def encode(examples: list[Example]) -> EncodedExamples:
        return encode_examples(examples, model.src_vocab, model.tgt_vocab)

    result = train(
        model, encode(splits.train), encode(splits.validation), config, on_epoch=on_epoch, checkpoint=checkpoint, on_step=on_step
    )
    return model, result


def run_experiment(
    config: ExperimentConfig,
    on_epoch: EpochCallback | None = None,
    checkpoint: Path | None = None,
    on_step: StepCallback | None = None,
) -> ExperimentResult:
    """Prepare data, train, and evaluate on the held-out test split, saying how training goes
    on the ``attnlab.progress`` logger (see the module docstring) besides calling ``on_epoch``
    and ``on_step``."""
    task, splits = prepare_data(config)
    logger = logging.getLogger(PROGRESS_LOGGER)
    lines = PeriodicLines()

    def epoch_done(metrics: dict[str, float]) -> None:
        logger.info(epoch_line(metrics, config.epochs))
        lines.reset_clock(time.monotonic())
        if on_epoch is not None:
            on_epoch(metrics)

    def step_done(progress: StepProgress) -> None:
        if lines.due(progress, time.monotonic()):
            logger.info(step_line(progress))
        if on_step is not None:
            on_step(progress)

    with _shown(logger):
        model, training = train_model(config, task, splits, epoch_done, checkpoint, step_done)
    evaluation = evaluate(model, splits.test, beam_size=config.beam_size)
    return ExperimentResult(config, task, splits, model, training, evaluation)


@contextmanager
def _shown(logger: logging.Logger) -> Iterator[None]:
    """Make ``logger``'s INFO lines visible on stderr for a while, unless its user decided
    otherwise: a level set on it (or on ``attnlab``) is kept, and where logging has handlers,
    they print it."""
    level, handler = logger.level, None
    chain = [logger, logger.parent] if isinstance(logger.parent, logging.Logger) and logger.parent is not logging.root else [logger]
    if all(item.level == logging.NOTSET for item in chain):
        logger.setLevel(logging.INFO)
    if not logger.hasHandlers():
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    try:
        yield
    finally:
        logger.setLevel(level)
        if handler is not None:
            logger.removeHandler(handler)
