"""Erasure tests: does the output depend on the source position that attention points at?

The test of Serrano & Smith (2019), "Is Attention Interpretable?", on the question of Jain &
Wallace (2019), "Attention is not Explanation": remove one source position from a step's
attention, renormalise over the rest, and see whether the prediction changes.

For a sample of the test set (:data:`SAMPLE_SIZE` examples drawn with :data:`SAMPLE_SEED`),
teacher-forced, at every aligned output step (a target character with a gold source position,
the steps of the alignment measures), three probes:

- **top**: the step's most-attended source position;
- **random**: a source position drawn uniformly among the real (unpadded) ones that are
  neither the most-attended nor gold (a step without such a position has no random probe);
- **gold**: the gold source position(s) of the step, all of them.

Erasing a set of positions at step t: the decoder's :meth:`~attnlab.plugins.Decoder.step` for
step t is called again from the same state (the unerased teacher-forced state before step t)
with the source mask False at those positions, so the scorer's softmax renormalises the weights
over the remaining positions and the context is their weighted sum (a multi-head scorer
renormalises every head). Nothing else changes: the encoder's outputs, the previous steps and
the gold previous token are those of the unerased pass. For the ``rnn`` decoder this replaces
exactly the one attention distribution the step reports; the ``transformer`` decoder's step runs
the new position over its cache of the earlier positions' keys and values (those of the unerased
pass), so there the positions are hidden from the cross-attention of every layer at that
position. (Before the transformer kept a cache, its step ran the whole prefix again with the
erased mask, hiding them at the earlier positions too: its erasure figures from then measure that.)

Per probe, over the steps it applies to: the **flip rate** ``erasure_flip_<probe>`` (share of
steps whose predicted character, the argmax of the logits, changes) and the **mean probability
drop** ``erasure_drop_<probe>`` (probability of the originally predicted character before minus
after; negative when erasing raised it); ``erasure_examples`` is the number of examples probed.
A scorer that does not attend (``none``) gets NaN for all of them.

Cost: one decoder step for the N examples plus one for 3N rows per target position. Measured
with ``python benchmarks/bench_evaluate.py [--scorer S] [--decoder D]`` (one torch thread, a
loaded 2-core machine), 500 sampled examples of the date task: 0.7 s for the default run (rnn
decoder, scaled_dot), 1.0 s with additive or multihead, 7.8 s with the transformer decoder
(whose step re-runs its prefix).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnlab.data.splits import EncodedExamples, encode_examples
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import Example

#: Test examples sampled for the erasure tests (all of them when the test set is smaller).
SAMPLE_SIZE = 500
#: Seed of the sample and of the random probe's positions.
SAMPLE_SEED = 0
#: The probes, in the order of the metric names.
PROBES = ("top", "random", "gold")


def sample_indices(count: int, size: int = SAMPLE_SIZE, seed: int = SAMPLE_SEED) -> list[int]:
    """Indices of ``size`` of ``count`` examples (all when ``count`` <= ``size``), sorted; the
    same for the same arguments."""
    if count <= size:
        return list(range(count))
    return sorted(random.Random(seed).sample(range(count), size))


def gold_masks(examples: list[Example], steps: int, length: int) -> Tensor:
    """bool [N, steps, length]: True at the gold source positions of each example's step
    (nothing for EOS, empty entries and unknown alignments)."""
    gold = torch.zeros(len(examples), steps, length, dtype=torch.bool)
    for row, example in enumerate(examples):
        for t, links in enumerate((example.alignment or ())[:steps]):
            for position in links:
                gold[row, t, position] = True
    return gold


def random_positions(candidates: Tensor, generator: torch.Generator) -> Tensor:
    """bool [N, Ls] with one position drawn uniformly from each row's ``candidates`` (bool
    [N, Ls]); rows without a candidate are all False."""
    noise = torch.rand(candidates.shape, generator=generator).to(candidates.device)
    pick = noise.masked_fill(~candidates, -1.0).argmax(dim=-1, keepdim=True)
    chosen = torch.zeros_like(candidates).scatter_(-1, pick, True)
    return chosen & candidates


@dataclass
class ErasureTally:
    """Running sums per probe, so batches combine exactly: steps probed, flips, summed drops;
    and the examples probed."""

    examples: int = 0
    steps: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROBES, 0))
    flips: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROBES, 0))
    drops: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PROBES, 0.0))
    attends: bool = True

    def add(self, probe: str, valid: Tensor, flipped: Tensor, drop: Tensor) -> None:
        """One probe at one step: valid, flipped bool [N]; drop float [N]."""
        self.steps[probe] += int(valid.sum())
        self.flips[probe] += int((flipped & valid).sum())
        self.drops[probe] += float(drop[valid].sum())

    def metrics(self) -> dict[str, float]:
        """erasure_flip_<probe> and erasure_drop_<probe> for top, random, gold (NaN for a probe
        with no step) and erasure_examples, the test examples probed; all NaN for a scorer that
        does not attend."""
        out = {"erasure_examples": float(self.examples) if self.attends else math.nan}
        for probe in PROBES:
            n = self.steps[probe] if self.attends else 0
            out[f"erasure_flip_{probe}"] = self.flips[probe] / n if n else math.nan
        for probe in PROBES:
            n = self.steps[probe] if self.attends else 0
            out[f"erasure_drop_{probe}"] = self.drops[probe] / n if n else math.nan
        return out


@torch.inference_mode()
def erase_batch(model: Seq2Seq, data: EncodedExamples, examples: list[Example], tally: ErasureTally, generator: torch.Generator) -> None:
    """Run the three probes at every aligned step of ``data`` (rows = ``examples``) into ``tally``.

    One unerased step for all rows, then one step for the three probes at once (batch 3N), per
    target position.
    """
    model.eval()
    tally.examples += len(examples)
    decoder, src_mask = model.decoder, data.src_mask
    tgt_in = data.tgt[:, :-1]
    steps, length = tgt_in.shape[1], src_mask.shape[1]
    gold = gold_masks(examples, steps, length).to(src_mask.device)
    memory = model.encode(data.src, src_mask)
    memory3 = type(memory)(*(m.repeat(3, *[1] * (m.dim() - 1)) for m in memory))
    state = decoder.start(memory, src_mask)
    for t in range(steps):
        tokens = tgt_in[:, t]
        logits, next_state, attn = decoder.step(tokens, state, memory, src_mask)
        if attn.weights is None:
            tally.attends = False
            return
        probs = logits.softmax(dim=-1)
        predicted = probs.argmax(dim=-1)
        before = probs.gather(-1, predicted.unsqueeze(-1)).squeeze(-1)
        top = torch.zeros_like(src_mask).scatter_(-1, attn.weights[:, 0].argmax(-1, keepdim=True), True)
        aligned = gold[:, t].any(-1)
        erased = torch.stack([top, random_positions(src_mask & ~top & ~gold[:, t], generator), gold[:, t]])
        kept = src_mask & ~erased  # [3, N, Ls]
        valid = aligned & erased.any(-1) & kept.any(-1)  # [3, N]
        masks = torch.where(valid.unsqueeze(-1), kept, src_mask).flatten(0, 1)
        state3 = tuple(s.repeat(3, *[1] * (s.dim() - 1)) for s in state)
        erased_logits, _, _ = decoder.step(tokens.repeat(3), state3, memory3, masks)
        erased_probs = erased_logits.softmax(dim=-1).view(3, *probs.shape)
        after = erased_probs.gather(-1, predicted.expand(3, -1).unsqueeze(-1)).squeeze(-1)
        flipped = erased_probs.argmax(dim=-1) != predicted
        for index, probe in enumerate(PROBES):
            tally.add(probe, valid[index], flipped[index], before - after[index])
        state = next_state


def erasure_metrics(
    model: Seq2Seq,
    examples: list[Example],
    size: int = SAMPLE_SIZE,
    seed: int = SAMPLE_SEED,
    batch_size: int = 256,
) -> dict[str, float]:
    """The erasure metrics (see the module docstring) of ``model`` on a sample of ``size`` of
    ``examples`` drawn with ``seed``, run in batches of ``batch_size``."""
    device = next(model.parameters()).device
    chosen = [examples[i] for i in sample_indices(len(examples), size, seed)]
    generator = torch.Generator().manual_seed(seed)
    tally = ErasureTally()
    for start in range(0, len(chosen), batch_size):
        part = chosen[start : start + batch_size]
        data = encode_examples(part, model.src_vocab, model.tgt_vocab).to(device)
        erase_batch(model, data, part, tally, generator)
    return tally.metrics()
