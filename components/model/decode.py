"""Batched decoding: greedy for a whole batch at once, and beam search."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from attnlab.data.vocab import EOS, PAD, SOS
from attnlab.model.assembly import Seq2Seq
from attnlab.model.cpu_settings import tune_cpu
from attnlab.plugins.decoder import cat_steps


def default_max_length(source_length: int) -> int:
    """Decoding steps allowed for a source of this length (EOS included), unless told otherwise."""
    return 2 * source_length + 16


class Decoded(NamedTuple):
    """tokens: long [B, T] (PAD after EOS); weights: [B, T, Ls] or None;
    head_weights: [B, H, T, Ls] or None. Step t's weights are those used to emit tokens[:, t]."""

    tokens: Tensor
    weights: Tensor | None
    head_weights: Tensor | None


@torch.inference_mode()
def greedy_decode(model: Seq2Seq, src: Tensor, src_mask: Tensor, max_length: int) -> Decoded:
    """Greedy decoding of src long [B, Ls] / src_mask bool [B, Ls], at most ``max_length`` steps
    (EOS included); stops as soon as every row has emitted EOS."""
    tune_cpu()
    memory = model.encode(src, src_mask)
    state = model.decoder.start(memory, src_mask)
    tokens = torch.full((src.shape[0],), SOS, dtype=torch.long, device=src.device)
    done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
    out, weights, heads = [], [], []
    for _ in range(max_length):
        logits, state, attn = model.decoder.step(tokens, state, memory, src_mask)
        tokens = logits.argmax(dim=-1).masked_fill(done, PAD)
        out.append(tokens)
        weights.append(attn.weights)
        heads.append(attn.head_weights)
        done |= tokens == EOS
        if bool(done.all()):
            break
    return Decoded(torch.stack(out, dim=1), cat_steps(weights, dim=1), cat_steps(heads, dim=2))


@torch.inference_mode()
def beam_search(model: Seq2Seq, src: Tensor, src_mask: Tensor, max_length: int, beam_size: int) -> Tensor:
    """Beam search with summed log-probabilities; returns the best tokens long [B, T].

    All B * beam_size hypotheses advance together in one batch; a hypothesis that emitted EOS
    keeps its score and only extends with PAD.
    """
    if beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}")
    tune_cpu()
    batch, k = src.shape[0], beam_size
    memory = model.encode(src, src_mask)
    memory = type(memory)(*(m.repeat_interleave(k, dim=0) for m in memory))
    mask = src_mask.repeat_interleave(k, dim=0)
    state = model.decoder.start(memory, mask)
    tokens = torch.full((batch * k,), SOS, dtype=torch.long, device=src.device)
    # Only the first beam is live at the start, so the k beams do not begin as copies.
    scores = torch.full((batch, k), float("-inf"), device=src.device)
    scores[:, 0] = 0.0
    history = torch.empty(batch * k, 0, dtype=torch.long, device=src.device)
    done = torch.zeros(batch * k, dtype=torch.bool, device=src.device)
    rows = torch.arange(batch, device=src.device).unsqueeze(1) * k  # [B, 1]
    for _ in range(max_length):
        logits, state, _ = model.decoder.step(tokens, state, memory, mask)
        logp = torch.log_softmax(logits.float(), dim=-1)  # [B*k, V]
        finished = torch.full_like(logp, float("-inf"))
        finished[:, PAD] = 0.0
        logp = torch.where(done.unsqueeze(1), finished, logp)
        vocab = logp.shape[1]
        total = (scores.view(-1, 1) + logp).view(batch, k * vocab)
        scores, flat = total.topk(k, dim=1)  # [B, k]
        parent = (rows + flat // vocab).view(-1)  # [B*k] indices into the previous beams
        tokens = (flat % vocab).view(-1)
        state = tuple(s.index_select(0, parent) for s in state)
        history = torch.cat([history.index_select(0, parent), tokens.unsqueeze(1)], dim=1)
        done = done.index_select(0, parent) | (tokens == EOS)
        if bool(done.all()):
            break
    best = scores.argmax(dim=1) + rows.squeeze(1)
    return history.index_select(0, best)
