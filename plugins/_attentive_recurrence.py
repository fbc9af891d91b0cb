"""The rnn decoder's recurrence with dot-product attention as one autograd function with a
hand-written backward pass (:class:`AttentiveGRUScan`), and its single decoding step; built on the
GRU arithmetic of :mod:`attnlab.plugins._recurrence`, time-major like it.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from attnlab.plugins._recurrence import (
    cell_backward,
    gates,
    gru_cell,
    hidden_bias_grad,
    hidden_weight_grad,
    loop,
    table_grad,
    weight_grad,
)
from attnlab.plugins.attention import masked_softmax


def _dot_each(memory: Tensor, x: Tensor) -> Tensor:
    """memory [B, L, D] . x [B, D] -> [B, L]. As an elementwise product and sum: bmm of these
    shapes is several times slower on the CPU (the weighted sum over L is the other way round)."""
    return (memory * x.unsqueeze(1)).sum(-1)


def _attentive_step(
    gx: Tensor,
    h: Tensor,
    memory: Tensor,
    mask: Tensor | None,
    w_context: Tensor,
    w_hh: Tensor,
    b_hh: Tensor,
    scale: float,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    """One step of :class:`AttentiveGRUScan`: gx [B, 3H] the token's input gates, h [B, H] the
    previous state -> (new state [B, H], context [B, D], weights [B, L], rz [B, 2H], n [B, H],
    ghn [B, H])."""
    a = masked_softmax(_dot_each(memory, h) * scale, mask)
    c = torch.bmm(a.unsqueeze(1), memory).squeeze(1)
    gh = torch.addmm(b_hh, h, w_hh.t())
    h, rz, n = gru_cell(torch.addmm(gx, c, w_context.t()), gh, h)
    return h, c, a, rz, n, gh[:, 2 * h.shape[1] :]


def _decoding_step(
    tokens: Tensor, table: Tensor, h: Tensor, memory: Tensor, mask: Tensor | None,
    w_context: Tensor, w_hh: Tensor, b_hh: Tensor, scale: float,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    h, c, a, *_ = _attentive_step(table[tokens], h, memory, mask, w_context, w_hh, b_hh, scale)
    return h, c, a


def attentive_step(
    tokens: Tensor, table: Tensor, h: Tensor, memory: Tensor, mask: Tensor | None,
    w_context: Tensor, w_hh: Tensor, b_hh: Tensor, scale: float,
) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """One decoding step of :class:`AttentiveGRUScan`'s recurrence, without autograd bookkeeping
    (compiled inside ``compiled()``): tokens long [B], table [V, 3H], h [B, H] -> (new state
    [B, H], context [B, D], weights [B, L])."""
    return loop(_decoding_step)(tokens, table, h, memory, mask, w_context, w_hh, b_hh, scale)


def _attentive_forward(
    tokens: Tensor, table: Tensor, h0: Tensor, memory: Tensor, mask: Tensor | None,
    w_context: Tensor, w_hh: Tensor, b_hh: Tensor, scale: float,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:  # fmt: skip
    """The decoder's loop; see :class:`AttentiveGRUScan`. Returns features [T, B, H + D]
    (states and contexts side by side), states [T + 1, B, H] (h0 first), contexts [T, B, D],
    weights [T, B, L], rz [T, B, 2H], n and ghn [T, B, H]."""
    states = [h0]
    contexts: list[Tensor] = []
    weights: list[Tensor] = []
    rzs: list[Tensor] = []
    ns: list[Tensor] = []
    ghns: list[Tensor] = []
    h = h0
    for t in range(tokens.shape[0]):
        h, c, a, rz, n, ghn = _attentive_step(gates(table, tokens, t), h, memory, mask, w_context, w_hh, b_hh, scale)
        states.append(h)
        contexts.append(c)
        weights.append(a)
        rzs.append(rz)
        ns.append(n)
        ghns.append(ghn)
    all_states, all_contexts = torch.stack(states), torch.stack(contexts)
    features = torch.cat([all_states[1:], all_contexts], dim=-1)
    return features, all_states, all_contexts, torch.stack(weights), torch.stack(rzs), torch.stack(ns), torch.stack(ghns)


def _attentive_backward(
    d_states: Tensor, d_contexts: Tensor, d_weights: Tensor | None, states: Tensor, weights: Tensor,
    rzs: Tensor, ns: Tensor, ghns: Tensor, memory: Tensor, w_context: Tensor, w_hh: Tensor, scale: float,
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:  # fmt: skip
    """d states [T, B, H], d contexts [T, B, D], d weights [T, B, L] or None -> (d gi [T, B, 3H],
    d ghn [T, B, H], d b_hh [3H], d memory [B, L, D], d h0 [B, H])."""
    dh = torch.zeros_like(states[0])
    gx_steps: list[Tensor] = []
    ghn_steps: list[Tensor] = []
    score_steps: list[Tensor] = []
    ctx_steps: list[Tensor] = []
    for t in range(d_states.shape[0] - 1, -1, -1):
        gx, gh, dh = cell_backward(dh + d_states[t], states[t], rzs[t], ns[t], ghns[t])
        dc = torch.addmm(d_contexts[t], gx, w_context)
        a = weights[t]
        da = _dot_each(memory, dc)
        if d_weights is not None:
            da = da + d_weights[t]
        ds = a * (da - (a * da).sum(-1, keepdim=True)) * scale  # d scores / scale
        dh = torch.addmm(dh, gh, w_hh) + torch.bmm(ds.unsqueeze(1), memory).squeeze(1)
        gx_steps.append(gx)
        ghn_steps.append(gh[:, 2 * dh.shape[1] :])
        score_steps.append(ds)
        ctx_steps.append(dc)
    d_gx, d_ghn = torch.stack(gx_steps[::-1]), torch.stack(ghn_steps[::-1])
    # memory is attended as keys at every step and summed as values: [B, L, T] x [B, T, D].
    d_scores = torch.stack(score_steps[::-1]).permute(1, 2, 0)
    d_ctx = torch.stack(ctx_steps[::-1]).transpose(0, 1)
    d_memory = torch.baddbmm(torch.bmm(d_scores, states[:-1].transpose(0, 1)), weights.permute(1, 2, 0), d_ctx)
    return d_gx, d_ghn, hidden_bias_grad(d_gx, d_ghn), d_memory, dh


class AttentiveGRUScan(torch.autograd.Function):
    """A GRU decoder with dot-product attention, as the rnn decoder with the dot and scaled_dot
    scorers: at step t the query is the previous state h, the weights are
    a = softmax(scale * memory . h) over the unmasked positions, the context is c = a . memory,
    and the cell's input gates are table[tokens[t]] + W_c c.

    forward(tokens long [T, B], table [V, 3H], h0 [B, H], memory [B, L, D=H], mask bool [B, L] or None (True = may
    attend), w_context [3H, D], w_hh [3H, H], b_hh [3H], scale) ->
    (features [T, B, H + D]: each step's new state and context side by side, weights [T, B, L]).
    """

    @staticmethod
    def forward(
        ctx: Any, tokens: Tensor, table: Tensor, h0: Tensor, memory: Tensor, mask: Tensor | None,
        w_context: Tensor, w_hh: Tensor, b_hh: Tensor, scale: float,
    ) -> tuple[Tensor, Tensor]:  # fmt: skip
        features, states, contexts, weights, rzs, ns, ghns = loop(_attentive_forward)(
            tokens, table, h0, memory, mask, w_context, w_hh, b_hh, scale
        )
        ctx.save_for_backward(tokens, table, states, contexts, weights, rzs, ns, ghns, memory, w_context, w_hh)
        ctx.scale = scale
        return features, weights

    @staticmethod
    def backward(
        ctx: Any, d_features: Tensor | None, d_weights: Tensor | None
    ) -> tuple[None, Tensor, Tensor, Tensor, None, Tensor, Tensor, Tensor, None]:
        tokens, table, states, contexts, weights, rzs, ns, ghns, memory, w_context, w_hh = ctx.saved_tensors
        if d_features is None:
            d_features = torch.zeros_like(torch.cat([states[1:], contexts], dim=-1))
        size = states.shape[-1]
        d_gi, d_ghn, d_b_hh, d_memory, d_h0 = loop(_attentive_backward)(
            d_features[..., :size], d_features[..., size:], d_weights,
            states, weights, rzs, ns, ghns, memory, w_context, w_hh, ctx.scale,
        )  # fmt: skip
        d_w_context = weight_grad(d_gi, contexts)
        d_table = table_grad(d_gi, tokens, table)
        d_w_hh = hidden_weight_grad(d_gi, d_ghn, states[:-1])
        return None, d_table, d_h0, d_memory, None, d_w_context, d_w_hh, d_b_hh, None


def attentive_gru_scan(
    tokens: Tensor, table: Tensor, h0: Tensor, memory: Tensor, mask: Tensor | None,
    w_context: Tensor, w_hh: Tensor, b_hh: Tensor, scale: float,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """:class:`AttentiveGRUScan` applied (differentiable): its arguments and results as there,
    (features [T, B, H + D], weights [T, B, L])."""
    result: tuple[Tensor, Tensor] = AttentiveGRUScan.apply(  # type: ignore[no-untyped-call]  # torch leaves Function.apply unannotated
        tokens, table, h0, memory, mask, w_context, w_hh, b_hh, scale
    )
    return result
