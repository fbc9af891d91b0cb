"""What each optimisation step does to the weights: the loss (cross-entropy over real target
tokens, label smoothing while training), the optimiser (AdamW with the config's weight decay) and
the learning-rate schedule (a linear warmup, then constant, cosine or inverse square root),
stepped once per optimisation step.

With the defaults (no weight decay, no warmup, no smoothing) the arithmetic is Adam's with a
constant rate, bit for bit: AdamW with ``weight_decay=0`` multiplies each weight by exactly 1.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.optim.lr_scheduler import CosineAnnealingLR, LambdaLR, LRScheduler, SequentialLR

from attnlab.data.splits import EncodedExamples
from attnlab.data.vocab import PAD
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq


def sequence_loss(model: Seq2Seq, batch: EncodedExamples, teacher_forcing: float, label_smoothing: float = 0.0) -> torch.Tensor:
    """Mean cross-entropy over real target tokens (PAD ignored), the target distribution smoothed
    by ``label_smoothing`` (torch's: the gold token gets 1 - s + s/V, every other token s/V)."""
    out = model(batch.src, batch.src_mask, batch.tgt[:, :-1], teacher_forcing=teacher_forcing)
    return F.cross_entropy(out.logits.transpose(1, 2), batch.tgt[:, 1:], ignore_index=PAD, label_smoothing=label_smoothing)


def make_optimizer(model: torch.nn.Module, config: ExperimentConfig) -> torch.optim.AdamW:
    """AdamW over every parameter at ``config.learning_rate`` with ``config.weight_decay``
    (decoupled: each step multiplies every weight by 1 - lr x weight_decay before Adam's update)."""
    return torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)


def total_steps(config: ExperimentConfig, examples: int) -> int:
    """The optimisation steps of a run that trains every epoch on ``examples`` rows."""
    return config.epochs * math.ceil(examples / config.batch_size)


def make_schedule(optimizer: torch.optim.Optimizer, config: ExperimentConfig, examples: int) -> LRScheduler:
    """The learning-rate schedule of a run on ``examples`` training rows, stepped after every
    optimisation step. Step k (0-based) trains at learning_rate x factor(k):

    - k < w (``warmup_steps``): k / w, a linear rise from 0;
    - then, with j = k - w: ``constant`` 1; ``cosine`` (1 + cos(pi j / (T - w))) / 2, T the run's
      steps (0 at the last); ``inverse_sqrt`` sqrt(W / (W + j)), W = max(w, 1).
    """
    warmup = config.warmup_steps
    main = _after_warmup(optimizer, config, max(1, total_steps(config, examples) - warmup))
    if warmup == 0:
        return main
    rise = LambdaLR(optimizer, lambda step: step / warmup)
    return SequentialLR(optimizer, [rise, main], milestones=[warmup])


def _after_warmup(optimizer: torch.optim.Optimizer, config: ExperimentConfig, steps: int) -> LRScheduler:
    """The schedule of ``config.lr_schedule`` over the ``steps`` after the warmup."""
    if config.lr_schedule == "cosine":
        return CosineAnnealingLR(optimizer, T_max=steps)
    if config.lr_schedule == "inverse_sqrt":
        scale = max(1, config.warmup_steps)
        return LambdaLR(optimizer, lambda step: math.sqrt(scale / (scale + step)))
    return LambdaLR(optimizer, lambda step: 1.0)
