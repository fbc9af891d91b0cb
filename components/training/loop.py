"""Batched training with teacher forcing, AdamW, gradient clipping, early stopping and
per-epoch checkpoints a run can resume from; at the end the weights of the run's selection
(:mod:`attnlab.training.selection`) are loaded into the model.

Progress leaves through callbacks, one per epoch and one per step (the flow logs them); nothing
here knows about Prefect or MLflow.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from pydantic import ValidationError

from attnlab.data.splits import EncodedExamples
from attnlab.evaluation.metrics import DECODE_BATCH, decode_texts
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq
from attnlab.model.cpu_settings import release_freed_memory, tune_cpu
from attnlab.plugins._recurrence import compiled
from attnlab.training.optimization import held_out_loss, make_optimizer, make_schedule, sequence_loss
from attnlab.training.progress import StepCallback, StepProgress
from attnlab.training.selection import Keeper

#: Called after every epoch with that epoch's metrics (epoch, train_loss, val_loss,
#: val_exact_match, seconds (the whole epoch), train_seconds (its optimisation steps alone),
#: samples_per_second).
EpochCallback = Callable[[dict[str, float]], None]


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite, or grew by orders of magnitude (see divergence)."""


#: A training loss above this many times the run's first one has diverged: it started near the
#: loss of a uniform guess, and no step of a working optimisation multiplies it by 1000.
DIVERGENCE_FACTOR = 1e3


def divergence(loss: float, first_loss: float | None) -> str | None:
    """Why a training loss means divergence, or None.

    ``first_loss`` is the run's first training loss (None until there is one). A NaN or infinite
    loss has diverged, and so has one above DIVERGENCE_FACTOR x ``first_loss`` (a learning rate
    of 1e30 gives losses near 1e32 without ever becoming NaN).
    """
    if not math.isfinite(loss):
        return f"loss became {loss}"
    if first_loss is not None and first_loss > 0 and loss > DIVERGENCE_FACTOR * first_loss:
        return f"loss grew to {loss:.3g}, over {DIVERGENCE_FACTOR:g}x the first one ({first_loss:.3g})"
    return None


@dataclass
class TrainResult:
    """history: one metrics dict per epoch; stopped_early: the target exact match was reached;
    selected: which weights the model was left with (see :meth:`attnlab.training.selection.Keeper.select`:
    ``selected_epoch``, ``averaged_epochs``, ``selected_val_exact_match``, ``selected_val_loss``)."""

    history: list[dict[str, float]] = field(default_factory=list)
    stopped_early: bool = False
    train_seconds: float = 0.0
    selected: dict[str, float] = field(default_factory=dict)


def length_bucketed_batches(lengths: torch.Tensor, batch_size: int, generator: torch.Generator, pool: int = 1) -> list[torch.Tensor]:
    """Shuffled batches of row indices in which sources have similar lengths.

    Rows are shuffled, cut into pools of ``pool`` batches, sorted by length within each pool and
    batched; the batches are shuffled again. Less padding means fewer decoder steps per batch;
    ``pool=1`` gives plain shuffled batches.
    lengths: long [N]. Returns index tensors of at most ``batch_size`` rows.
    """
    order = torch.randperm(len(lengths), generator=generator)
    batches = []
    for start in range(0, len(order), batch_size * pool):
        chunk = order[start : start + batch_size * pool]
        chunk = chunk[torch.argsort(lengths[chunk], stable=True)]
        batches.extend(chunk.split(batch_size))
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


@torch.no_grad()
def validation_metrics(model: Seq2Seq, data: EncodedExamples, max_length: int | None = None) -> dict[str, float]:
    """Teacher-forced loss and greedy exact match on ``data``, ``DECODE_BATCH`` rows at a time;
    the exact match counts each distinct source once, right when its output equals any of the
    targets given for it (a word with two pronunciations is one word, as the test metrics count it)."""
    model.eval()
    loss = float(held_out_loss(model, data, DECODE_BATCH))
    texts = decode_texts(model, data, max_length)
    targets = [model.tgt_vocab.decode(row[1:]) for row in data.tgt.tolist()]
    by_source: dict[tuple[int, ...], tuple[str, set[str]]] = {}
    for source, text, target in zip(map(tuple, data.src.tolist()), texts, targets):
        by_source.setdefault(source, (text, set()))[1].add(target)
    hits = [text in references for text, references in by_source.values()]
    return {"val_loss": loss, "val_exact_match": sum(hits) / len(hits) if hits else 0.0}


def _validate(model: Seq2Seq, data: EncodedExamples, max_length: int | None, config: ExperimentConfig) -> dict[str, float]:
    """validation_metrics, its decoding compiled too under ``config.compile_loops`` (its batch
    shapes repeat every epoch)."""
    with compiled(config.compile_loops):
        return validation_metrics(model, data, max_length)


#: What a checkpoint holds (all tensors and plain values: it loads weights-only); besides,
#: ``selection``: what the run's :class:`~attnlab.training.selection.Keeper` keeps (absent from
#: checkpoints written before it existed).
CHECKPOINT_KEYS = frozenset({"config", "model", "optimizer", "schedule", "history", "train_seconds", "rng"})


def _save_checkpoint(
    path: Path, model: Seq2Seq, optimizer: torch.optim.Optimizer, schedule: torch.optim.lr_scheduler.LRScheduler,
    result: TrainResult, config: ExperimentConfig, keeper: Keeper,
) -> None:  # fmt: skip
    tmp = path.with_suffix(".tmp")
    torch.save(
        {
            "config": config.model_dump(mode="json"),
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "schedule": schedule.state_dict(),
            "history": result.history,
            "train_seconds": result.train_seconds,
            "rng": torch.get_rng_state(),
            "selection": keeper.state_dict(),
        },
        tmp,
    )
    tmp.replace(path)  # atomic: an interrupted save never leaves a half-written checkpoint


def _resume(
    path: Path, model: Seq2Seq, optimizer: torch.optim.Optimizer, schedule: torch.optim.lr_scheduler.LRScheduler,
    config: ExperimentConfig, keeper: Keeper,
) -> TrainResult:  # fmt: skip
    """Load the checkpoint at ``path`` into the model, optimizer, schedule and keeper; its history.
    A checkpoint written before a config field existed holds that field's default.
    Weights-only (:func:`attnlab.model.bundle.load_weights`): a checkpoint is often someone else's file
    (an artifact of a stopped run), and unpickling anything more could run code."""
    from attnlab.model.bundle import RefusedFile, load_weights

    state = load_weights(path)
    missing = CHECKPOINT_KEYS - state.keys() if isinstance(state, dict) else CHECKPOINT_KEYS
    if missing:
        raise RefusedFile(f"{path} is not an attnlab checkpoint (no {', '.join(sorted(missing))})")
    if _saved_config(state["config"]) != config:
        raise ValueError(
            f"checkpoint {path} was written by a different configuration; delete it or point the run at another checkpoint file"
        )
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    torch.set_rng_state(state["rng"])
    keeper.load_state_dict(state.get("selection") or {})
    return TrainResult(history=state["history"], train_seconds=state["train_seconds"])


def _saved_config(saved: object) -> ExperimentConfig | None:
    """The config a checkpoint was written with (the keys it lacks at their defaults), or None
    when it holds none that validates."""
    try:
        return ExperimentConfig.model_validate(saved)
    except ValidationError:
        return None


def train(
    model: Seq2Seq, train_data: EncodedExamples, validation_data: EncodedExamples, config: ExperimentConfig,
    max_length: int | None = None, on_epoch: EpochCallback | None = None, checkpoint: Path | None = None,
    on_step: StepCallback | None = None,
) -> TrainResult:  # fmt: skip
    """Train ``model`` in place for up to ``config.epochs`` epochs.

    Every epoch ends with a validation pass (loss, greedy exact match), the callback and, when
    ``checkpoint`` is given, a checkpoint there. If that file already exists (same config),
    training resumes after its last epoch. ``on_step`` hears of every optimisation step (a
    :class:`~attnlab.training.progress.StepProgress`: the progress inside an epoch; it runs on the
    training clock, so keep it cheap). Stops early once validation exact match reaches
    ``config.target_exact_match``. Raises TrainingDiverged on a NaN/inf loss or one that grew by
    orders of magnitude (see :func:`divergence`). Deterministic for a
    fixed seed on the CPU: the batch order of epoch e depends only on (seed, e). The model ends with
    the weights ``config.checkpoint`` and ``config.average_last`` select (``result.selected`` says which).
    """
    device = next(model.parameters()).device
    train_data, validation_data = train_data.to(device), validation_data.to(device)
    optimizer = make_optimizer(model, config)
    schedule = make_schedule(optimizer, config, len(train_data))
    result, keeper = TrainResult(), Keeper(config)
    if checkpoint is not None and checkpoint.exists():
        result = _resume(checkpoint, model, optimizer, schedule, config, keeper)
    first_loss = result.history[0]["train_loss"] if result.history else None
    for epoch in range(len(result.history) + 1, config.epochs + 1):
        if _reached_target(result.history, config):
            break
        started = time.perf_counter()
        model.train()
        loss_sum, seen, first_loss = _train_epoch(model, train_data, optimizer, schedule, config, epoch, first_loss, on_step)
        train_seconds = time.perf_counter() - started
        metrics = {
            "epoch": epoch,
            "train_loss": loss_sum / seen,
            **_validate(model, validation_data, max_length, config),
            "seconds": time.perf_counter() - started,
            "train_seconds": train_seconds,
            "samples_per_second": seen / train_seconds,
            "learning_rate": optimizer.param_groups[0]["lr"],
        }
        result.history.append(metrics)
        result.train_seconds += metrics["seconds"]
        keeper.observe(model, metrics)
        if checkpoint is not None:
            _save_checkpoint(checkpoint, model, optimizer, schedule, result, config, keeper)
        if on_epoch is not None:
            on_epoch(metrics)
    result.stopped_early = _reached_target(result.history, config)
    result.selected = keeper.select(model, result.history)
    if "selected_val_loss" not in result.selected:  # an average of epochs: measured here
        scores = _validate(model, validation_data, max_length, config)
        result.selected.update(selected_val_exact_match=scores["val_exact_match"], selected_val_loss=scores["val_loss"])
    release_freed_memory()
    return result


def _train_epoch(
    model: Seq2Seq,
    data: EncodedExamples,
    optimizer: torch.optim.Optimizer,
    schedule: torch.optim.lr_scheduler.LRScheduler,
    config: ExperimentConfig,
    epoch: int,
    first_loss: float | None,
    on_step: StepCallback | None,
) -> tuple[float, int, float | None]:
    """The optimisation steps of ``epoch`` over ``data`` (on the model's device), in the batch
    order of (seed, epoch). Returns the loss summed over rows, the rows seen and the run's first
    loss (``first_loss``, or this epoch's first when there was none yet); raises TrainingDiverged.
    """
    started = time.perf_counter()
    generator = torch.Generator().manual_seed(config.seed * 100_003 + epoch)
    batches = length_bucketed_batches(data.source_lengths.cpu(), config.batch_size, generator, config.length_bucketing)
    steps = math.ceil(len(data) / config.batch_size)
    loss_sum, seen = 0.0, 0
    for step, index in enumerate(batches, 1):
        batch = data.rows(index.to(data.src.device)).trimmed()
        loss = train_step(model, batch, optimizer, config)
        problem = divergence(loss, first_loss)
        if problem:
            raise TrainingDiverged(f"{problem} at epoch {epoch}; lower the learning rate")
        first_loss = loss if first_loss is None else first_loss
        schedule.step()
        loss_sum += loss * len(batch)
        seen += len(batch)
        if on_step is not None:
            on_step(
                StepProgress(
                    epoch, config.epochs, step, steps, (epoch - 1) * steps + step, seen, len(data),
                    loss, loss_sum / seen, seen / (time.perf_counter() - started),
                )
            )  # fmt: skip
    return loss_sum, seen, first_loss


def train_step(model: Seq2Seq, batch: EncodedExamples, optimizer: torch.optim.Optimizer, config: ExperimentConfig) -> float:
    """One optimisation step on ``batch`` (teacher forcing, clipping, the optimizer's update);
    returns the batch's loss. A NaN or infinite loss is returned without updating the model."""
    tune_cpu()
    with compiled(config.compile_loops):
        loss = sequence_loss(model, batch, config.teacher_forcing, config.label_smoothing)
        value = loss.item()
        if not math.isfinite(value):
            return value
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
    optimizer.step()
    return value


def _reached_target(history: list[dict[str, float]], config: ExperimentConfig) -> bool:
    target = config.target_exact_match
    return bool(history) and target is not None and history[-1]["val_exact_match"] >= target
