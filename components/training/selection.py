"""Which weights a run keeps once training ends (``config.checkpoint``, ``config.average_last``):
the last epoch's, the best epoch's on validation, or the mean of the last N epochs' weights.
The kept weights are the ones the run evaluates, registers and promotes.

What it needs across epochs (the best weights so far, the last N epochs' weights) is part of the
training checkpoint, so a resumed run keeps them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from attnlab.lab.config import ExperimentConfig

Weights = dict[str, Tensor]


def better(metrics: dict[str, float], than: dict[str, float]) -> bool:
    """Whether the epoch of ``metrics`` beats the one of ``than`` by :data:`~attnlab.lab.config.BEST_RULE`
    (on a full tie the earlier epoch stays)."""
    return (metrics["val_exact_match"], -metrics["val_loss"]) > (than["val_exact_match"], -than["val_loss"])


def average_weights(states: Sequence[Weights]) -> Weights:
    """The elementwise mean of ``states`` (same keys and shapes); a tensor that is not floating
    point (a counter) is taken from the last state."""
    averaged = {}
    for key, last in states[-1].items():
        if last.is_floating_point():
            averaged[key] = torch.stack([state[key].to(torch.float64) for state in states]).mean(dim=0).to(last.dtype)
        else:
            averaged[key] = last.clone()
    return averaged


def _copy(model: nn.Module) -> Weights:
    """A CPU copy of ``model``'s weights (they outlive the next optimisation step)."""
    return {key: value.detach().to("cpu", copy=True) for key, value in model.state_dict().items()}


@dataclass
class Keeper:
    """Watches the epochs of one run and keeps what its selection needs: the best epoch's weights
    (``checkpoint: best``) or the last ``average_last`` epochs' (``checkpoint: last``, N > 1)."""

    config: ExperimentConfig
    best_epoch: int | None = None
    best_metrics: dict[str, float] = field(default_factory=dict)
    best: Weights | None = None
    recent: list[tuple[int, Weights]] = field(default_factory=list)

    def observe(self, model: nn.Module, metrics: dict[str, float]) -> None:
        """Note the epoch that just ended (``metrics``: its history entry) and ``model``'s weights after it."""
        epoch = int(metrics["epoch"])
        if self.config.checkpoint == "best" and (self.best_epoch is None or better(metrics, self.best_metrics)):
            self.best_epoch, self.best_metrics, self.best = epoch, dict(metrics), _copy(model)
        if self.config.average_last > 1:
            self.recent = [*self.recent, (epoch, _copy(model))][-self.config.average_last :]

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of it (tensors and plain values: it loads weights-only)."""
        return {"best_epoch": self.best_epoch, "best_metrics": self.best_metrics, "best": self.best, "recent": self.recent}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`state_dict` gave (an empty dict: a checkpoint that kept nothing)."""
        self.best_epoch = state.get("best_epoch")
        self.best_metrics = dict(state.get("best_metrics") or {})
        self.best = state.get("best")
        self.recent = [(int(epoch), weights) for epoch, weights in state.get("recent") or []]

    def select(self, model: nn.Module, history: list[dict[str, float]]) -> dict[str, float]:
        """Load the kept weights into ``model``; what was kept: ``selected_epoch`` (the last of
        the averaged ones), ``averaged_epochs`` (1 without averaging) and, except for an average
        (whose validation the caller measures), ``selected_val_exact_match`` and ``selected_val_loss``."""
        if self.config.checkpoint == "best" and self.best is not None and self.best_epoch is not None:
            model.load_state_dict(self.best)
            return _kept(self.best_epoch, 1, self.best_metrics)
        last = history[-1]
        if len(self.recent) > 1:
            model.load_state_dict(average_weights([weights for _, weights in self.recent]))
            return {"selected_epoch": float(self.recent[-1][0]), "averaged_epochs": float(len(self.recent))}
        return _kept(int(last["epoch"]), 1, last)


def _kept(epoch: int, averaged: int, metrics: dict[str, float]) -> dict[str, float]:
    return {
        "selected_epoch": float(epoch),
        "averaged_epochs": float(averaged),
        "selected_val_exact_match": float(metrics["val_exact_match"]),
        "selected_val_loss": float(metrics["val_loss"]),
    }
