"""Attention and the gradient attributions, scored alike as explanations of the same outputs.

On the erasure tests' sample of the test set (:func:`attnlab.evaluation.erasure.sample_indices`),
teacher-forced on the gold target, each method explains the gold token's log-probability at every
target step (EOS included) by a score per source position: attention its weights, a gradient
method (:mod:`attnlab.evaluation.attribution`) the magnitude of its attribution. Per method:

- **agreement with the gold alignment** (tasks that have one), the measures attention already
  has (:mod:`attnlab.evaluation.alignment`) with the top-scored position as the "argmax":
  ``within_one``, ``shifted_accuracy`` (after the modal offset) and ``error_rate`` (AER);
- **faithfulness by erasure** (DeYoung et al. 2020, ERASER), at every step: erasing a position
  replaces its token by PAD (whose embedding is zero: integrated gradients' baseline), positions
  and mask unchanged, and the model runs again on the same prefix. ``comprehensiveness``: the
  probability of the token minus that probability with the top-:data:`TOP_K` positions erased
  (higher: those positions carried it); ``sufficiency``: minus that probability with every
  position but those erased (lower: they suffice); ``flip_top1``: the share of steps whose
  predicted token (argmax) changes when the top position is erased;
- **agreement with attention**: Kendall's tau-b between the method's scores and the attention
  weights over the source positions of a step, averaged over steps (Jain & Wallace 2019); steps
  where either is constant have no tau and are left out.

A model whose scorer does not attend (``none``) has no attention row (NaN) and no tau.
"""

from __future__ import annotations

import math

import pandas as pd
import torch
from torch import Tensor

from attnlab.data.splits import encode_examples
from attnlab.data.vocab import PAD
from attnlab.evaluation.alignment import alignment_metrics
from attnlab.evaluation.attribution import DEFAULT_STEPS, METHODS, ROWS_AT_ONCE, attribute_methods
from attnlab.evaluation.erasure import SAMPLE_SIZE, sample_indices
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import Example

#: Every explanation scored, attention first.
EXPLANATIONS = ("attention", *METHODS)
#: The measures of each explanation, in the order of the table's columns.
MEASURES = ("within_one", "shifted_accuracy", "error_rate", "comprehensiveness", "sufficiency", "flip_top1", "tau_attention")
#: Positions erased for comprehensiveness and kept for sufficiency.
TOP_K = 1


def explanation_table(model: Seq2Seq, examples: list[Example], size: int = SAMPLE_SIZE, steps: int = DEFAULT_STEPS) -> pd.DataFrame:
    """One row per explanation (:data:`EXPLANATIONS`), one column per measure (:data:`MEASURES`),
    over ``size`` sampled ``examples``; ``steps``: integrated gradients' points."""
    sample = [examples[i] for i in sample_indices(len(examples), size)]
    data = encode_examples(sample, model.src_vocab, model.tgt_vocab).trimmed()
    tgt_in, targets = data.tgt[:, :-1], data.tgt[:, 1:]
    model.eval()
    with torch.no_grad():
        unerased = model(data.src, data.src_mask, tgt_in, need_weights=True)
    attention = unerased.weights  # [N, T, Ls] or None
    probabilities = unerased.logits.softmax(-1)  # [N, T, V]
    attributions = attribute_methods(model, data.src, data.src_mask, targets, METHODS, steps=steps)
    scores = {"attention": attention, **{m: attributions[m].abs() for m in METHODS}}
    live = targets != PAD  # [N, T]
    golds = [example.alignment for example in sample]
    rows = {}
    for name, score in scores.items():
        if score is None:
            rows[name] = dict.fromkeys(MEASURES, math.nan)
            continue
        ranked = score.masked_fill(~data.src_mask.unsqueeze(1), -math.inf)  # [N, T, Ls]
        aligned = alignment_metrics(list(ranked), golds)
        rows[name] = {
            "within_one": aligned["alignment_within_one"],
            "shifted_accuracy": aligned["alignment_shifted_accuracy"],
            "error_rate": aligned["alignment_error_rate"],
            **erasure_measures(model, data.src, data.src_mask, tgt_in, targets, live, ranked, probabilities),
            "tau_attention": mean_tau(score, attention, live, data.src_mask) if name != "attention" else math.nan,
        }
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(MEASURES)).rename_axis("explanation")
    table.attrs["examples"] = len(sample)
    return table


def erasure_measures(
    model: Seq2Seq, src: Tensor, src_mask: Tensor, tgt_in: Tensor, targets: Tensor, live: Tensor, ranked: Tensor, probabilities: Tensor
) -> dict[str, float]:
    """comprehensiveness, sufficiency and flip_top1 over the ``live`` [N, T] steps, erasing by
    ``ranked`` [N, T, Ls] (padding at -inf); src, src_mask [N, Ls], tgt_in, targets [N, T];
    probabilities [N, T, V]: the model's next-token probabilities with nothing erased."""
    example, step = live.nonzero().unbind(1)  # [R] each: the steps measured
    src, src_mask, tgt_in = src[example], src_mask[example], tgt_in[example]  # [R, ...]: a row per step
    top = ranked[example, step].topk(min(TOP_K, ranked.shape[-1]), dim=-1).indices  # [R, k]
    chosen = torch.zeros_like(src_mask).scatter_(1, top, True) & src_mask
    full = probabilities[example, step]  # [R, V]
    without = _probabilities(model, src.masked_fill(chosen, PAD), src_mask, tgt_in, step)
    only = _probabilities(model, src.masked_fill(~chosen, PAD), src_mask, tgt_in, step)
    token = targets[example, step].unsqueeze(1)
    here = full.gather(1, token).squeeze(1)
    flipped = full.argmax(-1) != without.argmax(-1)  # TOP_K is 1: erasing the top position
    return {
        "comprehensiveness": float((here - without.gather(1, token).squeeze(1)).mean()),
        "sufficiency": float((here - only.gather(1, token).squeeze(1)).mean()),
        "flip_top1": float(flipped.float().mean()),
    }


@torch.no_grad()
def _probabilities(model: Seq2Seq, src: Tensor, src_mask: Tensor, tgt_in: Tensor, step: Tensor) -> Tensor:
    """float [R, V]: the next-token probabilities of each row at its ``step`` [R]."""
    parts = []
    for rows in torch.arange(len(src)).split(ROWS_AT_ONCE):
        logits = model(src[rows], src_mask[rows], tgt_in[rows]).logits  # [r, T, V]
        parts.append(logits[torch.arange(len(rows)), step[rows]].softmax(-1))
    return torch.cat(parts)


def mean_tau(scores: Tensor, attention: Tensor | None, live: Tensor, src_mask: Tensor) -> float:
    """Kendall's tau-b of ``scores`` and ``attention`` [N, T, Ls] over each live step's real source
    positions, averaged over the steps that have one (NaN: none, or no attention).

    Per step, over the pairs i < j of its real positions, with sx = sign(x_i - x_j) and sy the same
    for y: tau-b = sum(sx * sy) / sqrt(sum |sx| * sum |sy|) (the numerator is concordant minus
    discordant pairs, and sum |sx| the pairs not tied in x); a step where either is constant has
    no tau."""
    if attention is None:
        return math.nan
    example, step = live.nonzero().unbind(1)  # [R] each
    x, y = scores[example, step].double(), attention[example, step].double()  # [R, Ls]
    real = src_mask[example]
    upper = torch.ones(real.shape[1], real.shape[1], dtype=torch.bool).triu(1)  # [Ls, Ls]: i < j
    pairs = real.unsqueeze(2) & real.unsqueeze(1) & upper  # [R, Ls, Ls]
    sx = (x.unsqueeze(2) - x.unsqueeze(1)).sign() * pairs
    sy = (y.unsqueeze(2) - y.unsqueeze(1)).sign() * pairs
    untied = sx.abs().sum((1, 2)) * sy.abs().sum((1, 2))  # [R]
    kept = untied > 0
    if not kept.any():
        return math.nan
    return float(((sx * sy).sum((1, 2))[kept] / untied[kept].sqrt()).mean())


def explanation_metrics(table: pd.DataFrame) -> dict[str, float]:
    """``explain_<explanation>_<measure>`` for every cell of :func:`explanation_table`'s table, and
    ``explain_examples``: how many examples it scored (attention's tau with itself is no measure)."""
    cells = {
        f"explain_{name}_{measure}": float(table.loc[name, measure])
        for name in table.index
        for measure in table.columns
        if (name, measure) != ("attention", "tau_attention")
    }
    return {**cells, "explain_examples": float(table.attrs["examples"])}
