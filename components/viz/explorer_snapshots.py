"""Snapshots of attention as training goes, for a run's explorer page: the average weights of a
few fixed probe examples (teacher-forced on their gold targets) before training, at
:func:`first_epoch_steps` inside the first epoch and after every epoch, so the page can show
alignment forming even when training stops after one epoch; with each, the exact match and
alignment of a few validation examples (the alignment curve). See :class:`SnapshotRecorder`.

Pure: no Prefect, no MLflow; plain dicts and lists out.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import torch

from attnlab.data.splits import encode_examples
from attnlab.evaluation.metrics import AttentionTally, decode_texts, exact_match, teacher_forced_attention
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import Example
from attnlab.training.progress import StepProgress
from attnlab.viz.explorer_views import gold_positions, rounded

#: Snapshots taken inside the first epoch, about (where alignment forms; see first_epoch_steps).
FIRST_EPOCH_SNAPSHOTS = 8


def first_epoch_steps(steps: int, count: int = FIRST_EPOCH_SNAPSHOTS) -> list[int]:
    """The steps of the first epoch (of ``steps``) after which a snapshot is taken: every
    ``ceil(steps / count)`` steps, the epoch's last step left to the end-of-epoch snapshot."""
    every = max(1, math.ceil(steps / max(1, count)))
    return list(range(every, steps, every))


def snapshot_label(epoch: int, step: int, end_of_epoch: bool) -> str:
    """How the page names a snapshot taken at optimisation ``step`` of the run, in ``epoch``."""
    if step == 0:
        return "before training"
    if end_of_epoch:
        return f"after epoch {epoch} (step {step})"
    return f"step {step}, in epoch {epoch}"


class SnapshotRecorder:
    """The average attention of a few fixed probe examples as training goes.

    ``watch(model)`` names the model (it fits ``train_model``'s ``on_model``) and, with
    ``from_start``, records it untrained (step 0; not for a run resumed from a checkpoint).
    ``step(progress)``, called after every optimisation step, records at the
    :func:`first_epoch_steps`; ``record(epoch)``, called after each epoch, records the model as
    it is then. Each record runs one teacher-forced pass over the probes' gold targets (SOS, the
    target; the rows are the target characters and EOS) without gradients, in eval mode, and
    leaves the model's mode and the random state as they were; with ``measured`` examples it
    also measures their greedy exact match and alignment, appended to ``curve``. ``seconds`` is
    the time spent. ``snapshots()`` is the document's ``snapshots`` entry.
    """

    def __init__(self, probes: Sequence[Example], measured: Sequence[Example] = (), from_start: bool = False) -> None:
        self.probes = list(probes)
        self.measured = list(measured)
        self.from_start = from_start
        self.model: Seq2Seq | None = None
        self.epochs: list[int] = []
        self.steps: list[int] = []
        self.labels: list[str] = []
        self.weights: list[list[list[list[float]]]] = [[] for _ in self.probes]  # [probe][snapshot] -> [Lt, Ls]
        self.tokens: list[tuple[list[str], list[str]]] = []  # [probe] -> (source tokens, target tokens)
        #: One point per record: step, epoch, end_of_epoch, exact_match, alignment_accuracy,
        #: alignment_within_one.
        self.curve: list[dict[str, float]] = []
        self.attends = True
        self.seconds = 0.0
        self._global_step = 0

    def watch(self, model: Seq2Seq) -> None:
        """Record ``model`` from now on (and now, with ``from_start``)."""
        self.model = model
        if self.from_start:
            self.record(0, end_of_epoch=False)

    def step(self, progress: StepProgress) -> bool:
        """Hear of one optimisation step; record when it is one of :func:`first_epoch_steps`.
        Whether it recorded."""
        self._global_step = progress.global_step
        if progress.epoch != 1 or progress.step not in first_epoch_steps(progress.steps):
            return False
        self.record(progress.epoch, end_of_epoch=False)
        return True

    @torch.inference_mode()
    def record(self, epoch: int, end_of_epoch: bool = True) -> None:
        """The probes' weights of the watched model as they are now, in (or after) ``epoch``."""
        model = self.model
        if model is None:
            raise RuntimeError("SnapshotRecorder.record before watch(model)")
        started = time.perf_counter()
        was_training, rng = model.training, torch.get_rng_state()
        model.eval()
        try:
            if self.measured:
                point = _curve_point(model, self.measured)
                self.curve.append({"step": self._global_step, "epoch": epoch, "end_of_epoch": end_of_epoch, **point})
            if self.probes and self.attends:
                self._snapshot(model, epoch, end_of_epoch)
        finally:
            model.train(was_training)
            torch.set_rng_state(rng)
        self.seconds += time.perf_counter() - started

    def _snapshot(self, model: Seq2Seq, epoch: int, end_of_epoch: bool) -> None:
        device = next(model.parameters()).device
        data = encode_examples(self.probes, model.src_vocab, model.tgt_vocab).to(device)
        weights = model(data.src, data.src_mask, data.tgt[:, :-1], need_weights=True).weights
        if weights is None:
            self.attends = False
            return
        weights = weights.float().cpu()  # [probes, Lt + 1, Ls]
        self.tokens = [(model.src_vocab.split(probe.source), model.tgt_vocab.split(probe.target)) for probe in self.probes]
        for row, (source, target) in enumerate(self.tokens):
            self.weights[row].append(rounded(weights[row, : len(target) + 1, : len(source)]))
        self.epochs.append(int(epoch))
        self.steps.append(self._global_step)
        self.labels.append(snapshot_label(epoch, self._global_step, end_of_epoch))

    def snapshots(self) -> dict[str, Any] | None:
        """``{"epochs", "steps", "labels", "examples"}`` for the document, or None (nothing
        recorded, or a model that does not attend)."""
        if not self.epochs:
            return None
        return {
            "epochs": list(self.epochs),
            "steps": list(self.steps),
            "labels": list(self.labels),
            "examples": [
                {
                    "source_tokens": source,
                    "output_tokens": [*target, "<eos>"],
                    "gold": gold_positions(probe, len(target)),
                    "weights": weights,
                }
                for probe, (source, target), weights in zip(self.probes, self.tokens, self.weights)
            ],
        }


def _curve_point(model: Seq2Seq, examples: Sequence[Example]) -> dict[str, float]:
    """Greedy exact match and teacher-forced alignment (accuracy, within one; NaN without
    attention or gold) of ``model`` on ``examples``."""
    device = next(model.parameters()).device
    data = encode_examples(list(examples), model.src_vocab, model.tgt_vocab).to(device)
    texts = decode_texts(model, data)
    tally = AttentionTally()
    weights, step_mask = teacher_forced_attention(model, data)  # [N, Lt + 1, Ls], [N, Lt + 1]
    tally.add(weights, step_mask, data.src_mask, list(examples))
    alignment = tally.metrics()
    return {
        "exact_match": exact_match(texts, [example.target for example in examples]),
        "alignment_accuracy": alignment["alignment_accuracy"],
        "alignment_within_one": alignment["alignment_within_one"],
    }
