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


@torch.no_grad()
def held_out_loss(model: Seq2Seq, data: EncodedExamples, rows: int) -> torch.Tensor:
    """``sequence_loss(model, data, 1.0)``, to the bit, computed ``rows`` at a time (a step's
    tensors grow with the rows: the whole of a 1,000-word validation split at once held ~90 MB
    more than a cmudict training step). Each batch gives its gold tokens' log-probabilities
    [rows, 1, Lt]; one ``nll_loss`` over all of them then takes the mean over real tokens in the
    same order as ``cross_entropy`` over the whole split does."""
    gold = []
    for start in range(0, len(data), rows):
        batch = data.rows(slice(start, start + rows))
        logits = model(batch.src, batch.src_mask, batch.tgt[:, :-1], teacher_forcing=1.0).logits
        # Over the vocabulary as axis 1 of [B, V, Lt], as cross_entropy takes it (over the last axis the floats differ).
        gold.append(F.log_softmax(logits.transpose(1, 2), dim=1).gather(1, batch.tgt[:, 1:].unsqueeze(1)))
    log_probs = torch.cat(gold)  # [N, 1, Lt]
    # Two classes [N, 2, Lt]: class 1 holds the gold log-probability of a real token; PAD steps ask for class 0, ignored.
    two_classes = torch.cat([torch.zeros_like(log_probs), log_probs], dim=1)
    return F.nll_loss(two_classes, (data.tgt[:, 1:] != PAD).long(), ignore_index=0)


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
