"""Batched decoding: greedy for a whole batch at once, and beam search.

Both step the decoder over the rows still being decoded: once at most half of them are left (rows
past their EOS, sources whose best hypothesis is decided), the others are dropped from the
memory, the mask and the decoder's state (``index_select`` along their batch axis, the axis beam
search reorders), so a few long outputs do not keep the whole batch stepping.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from attnlab.data.vocab import EOS, PAD, SOS
from attnlab.model.assembly import Seq2Seq
from attnlab.model.cpu_settings import tune_cpu
from attnlab.plugins.decoder import State, cat_steps
from attnlab.plugins.encoder import EncoderOutput


def default_max_length(source_length: int) -> int:
    """Decoding steps allowed for a source of this length (EOS included), unless told otherwise."""
    return 2 * source_length + 16


class Decoded(NamedTuple):
    """tokens: long [B, T] (PAD after EOS); weights: [B, T, Ls] or None;
    head_weights: [B, H, T, Ls] or None. Step t's weights are those used to emit tokens[:, t]."""

    tokens: Tensor
    weights: Tensor | None
    head_weights: Tensor | None


class _Rows:
    """What the decoder steps over: the rows still decoded, as indices into the batch, their
    memory, source mask and decoder state."""

    def __init__(self, index: Tensor, memory: EncoderOutput, mask: Tensor, state: State) -> None:
        self.index, self.memory, self.mask, self.state = index, memory, mask, state

    def keep(self, rows: Tensor, state_rows: Tensor | None = None) -> None:
        """Keep ``rows`` (long [R], indices into the current rows) of the memory and the mask, and
        ``state_rows`` of the state (default: the same rows)."""
        self.memory = type(self.memory)(*(m.index_select(0, rows) for m in self.memory))
        self.mask = self.mask.index_select(0, rows)
        self.reorder(rows if state_rows is None else state_rows)

    def reorder(self, rows: Tensor) -> None:
        """The decoder's state at ``rows`` (long [R]): beam search's surviving hypotheses."""
        self.state = tuple(s.index_select(0, rows) for s in self.state)


def _scatter(values: Tensor, index: Tensor, batch: int, fill: float) -> Tensor:
    """values [R, ...] of the rows ``index`` (long [R]) into a [batch, ...] tensor of ``fill``."""
    if values.shape[0] == batch:
        return values
    return values.new_full((batch, *values.shape[1:]), fill).index_copy_(0, index, values)


@torch.inference_mode()
def greedy_decode(model: Seq2Seq, src: Tensor, src_mask: Tensor, max_length: int) -> Decoded:
    """Greedy decoding of src long [B, Ls] / src_mask bool [B, Ls], at most ``max_length`` steps
    (EOS included); stops as soon as every row has emitted EOS. After a row's EOS its tokens are
    PAD and its weights 0."""
    tune_cpu()
    batch = src.shape[0]
    memory = model.encode(src, src_mask)
    rows = _Rows(torch.arange(batch, device=src.device), memory, src_mask, model.decoder.start(memory, src_mask))
    tokens = torch.full((batch,), SOS, dtype=torch.long, device=src.device)
    done = torch.zeros(batch, dtype=torch.bool, device=src.device)
    out: list[Tensor] = []
    weights: list[Tensor | None] = []
    heads: list[Tensor | None] = []
    for _ in range(max_length):
        logits, rows.state, attn = model.decoder.step(tokens, rows.state, rows.memory, rows.mask)
        tokens = logits.argmax(dim=-1).masked_fill(done, PAD)
        out.append(_scatter(tokens, rows.index, batch, PAD))
        for kept, part in ((weights, attn.weights), (heads, attn.head_weights)):
            live = None if part is None else part.masked_fill(done.view(-1, *[1] * (part.dim() - 1)), 0.0)
            kept.append(None if live is None else _scatter(live, rows.index, batch, 0.0))
        done |= tokens == EOS
        if bool(done.all()):
            break
        if 2 * int(done.sum()) >= done.numel():
            live_rows = (~done).nonzero().squeeze(1)
            rows.keep(live_rows)
            rows.index, tokens, done = rows.index[live_rows], tokens[live_rows], done[live_rows]
    return Decoded(torch.stack(out, dim=1), cat_steps(weights, dim=1), cat_steps(heads, dim=2))


class Beams(NamedTuple):
    """The k hypotheses a beam search ends with, best first. tokens: long [B, k, T] (PAD after
    EOS); scores: [B, k], each hypothesis's summed log-probability (of its tokens up to EOS)."""

    tokens: Tensor
    scores: Tensor


@torch.inference_mode()
def beam_search(model: Seq2Seq, src: Tensor, src_mask: Tensor, max_length: int, beam_size: int) -> Tensor:
    """Beam search (see :func:`beam_hypotheses`); returns the best tokens long [B, T]."""
    return beam_hypotheses(model, src, src_mask, max_length, beam_size).tokens[:, 0]


@torch.inference_mode()
def beam_hypotheses(model: Seq2Seq, src: Tensor, src_mask: Tensor, max_length: int, beam_size: int) -> Beams:
    """Beam search with summed log-probabilities over src long [B, Ls] / src_mask bool [B, Ls].

    All B * beam_size hypotheses advance together in one batch; a hypothesis that emitted EOS
    keeps its score and only extends with PAD. After each step the decoder's state (a recurrent
    decoder's hidden state, the transformer's per-layer cache of keys and values) is reordered
    along its batch axis with the surviving hypotheses' parent indices. A source is decided, and
    stops, once its best finished hypothesis scores more than every unfinished one (which can
    only lose log-probability from there): its best is then the one a search run to
    ``max_length`` would return, its other hypotheses as they stood.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    tune_cpu()
    batch, k, device = src.shape[0], beam_size, src.device
    memory = model.encode(src, src_mask)
    memory = type(memory)(*(m.repeat_interleave(k, dim=0) for m in memory))
    mask = src_mask.repeat_interleave(k, dim=0)
    rows = _Rows(torch.arange(batch, device=device), memory, mask, model.decoder.start(memory, mask))
    tokens = torch.full((batch * k,), SOS, dtype=torch.long, device=device)
    # Only the first beam is live at the start, so the k beams do not begin as copies.
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0
    history = torch.empty(batch * k, 0, dtype=torch.long, device=device)
    done = torch.zeros(batch * k, dtype=torch.bool, device=device)
    result = Beams(torch.full((batch, k, max_length), PAD, dtype=torch.long, device=device), scores.clone())
    undecided = torch.ones(batch, dtype=torch.bool, device=device)  # of the sources still stepped
    for _ in range(max_length):
        logits, rows.state, _ = model.decoder.step(tokens, rows.state, rows.memory, rows.mask)
        scores, parent, tokens = _extend(scores, logits, done)
        history = torch.cat([history.index_select(0, parent), tokens.unsqueeze(1)], dim=1)
        done = done.index_select(0, parent) | (tokens == EOS)
        decided = undecided & _decided(scores, done.view(-1, k))
        last = bool((undecided & ~decided).sum() == 0) or history.shape[1] == max_length
        _record(result, rows.index, undecided if last else decided, history.view(-1, k, history.shape[1]), scores)
        undecided &= ~decided
        if last:
            break
        if 2 * int(undecided.sum()) <= undecided.numel():
            kept = undecided.nonzero().squeeze(1)
            beams = (kept.unsqueeze(1) * k + torch.arange(k, device=device)).view(-1)  # their rows
            rows.keep(beams, parent.index_select(0, beams))
            rows.index, undecided, scores = rows.index[kept], undecided[kept], scores[kept]
            tokens, history, done = tokens[beams], history[beams], done[beams]
        else:
            rows.reorder(parent)
    return Beams(result.tokens[:, :, : history.shape[1]], result.scores)


def _extend(scores: Tensor, logits: Tensor, done: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One step of the beams. scores [S, k], logits [S * k, V], done bool [S * k] -> the k best
    extensions of each source: their scores [S, k] (best first), parents long [S * k] (indices
    into the current rows) and tokens long [S * k]."""
    sources, k = scores.shape
    logp = torch.log_softmax(logits.float(), dim=-1)  # [S*k, V]
    finished = torch.full_like(logp, float("-inf"))
    finished[:, PAD] = 0.0
    logp = torch.where(done.unsqueeze(1), finished, logp)
    vocab = logp.shape[1]
    total = (scores.view(-1, 1) + logp).view(sources, k * vocab)
    scores, flat = total.topk(k, dim=1)
    rows = torch.arange(sources, device=scores.device).unsqueeze(1) * k
    return scores, (rows + flat // vocab).view(-1), (flat % vocab).view(-1)


def _decided(scores: Tensor, done: Tensor) -> Tensor:
    """scores [S, k], done bool [S, k] -> bool [S]: the best finished hypothesis scores more than
    every unfinished one."""
    minus_inf = float("-inf")
    return scores.masked_fill(~done, minus_inf).amax(1) > scores.masked_fill(done, minus_inf).amax(1)


def _record(result: Beams, index: Tensor, chosen: Tensor, history: Tensor, scores: Tensor) -> None:
    """Write the ``chosen`` (bool [S]) sources' hypotheses history [S, k, T] and scores [S, k]
    into ``result`` at their batch rows ``index`` (long [S])."""
    if bool(chosen.any()):
        at = index[chosen]
        result.tokens[at, :, : history.shape[2]] = history[chosen]
        result.scores[at] = scores[chosen]
