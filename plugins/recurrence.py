"""GRU recurrences as single autograd functions with hand-written backward passes.

Autograd through a step-by-step GRU records some thirty small operations per step and adds up
gradients step by step. These functions run the whole sequence in one forward loop and one
backward loop of a dozen operations each, and compute the weight gradients once for all steps
(one large matmul instead of one small one per step). The arithmetic is that of ``nn.GRUCell``.

Everything here is time-major: input gates [T, B, 3H], states [T, B, H].

``use_compiled(True)`` runs both loops through ``torch.compile``, which fuses each step's
elementwise operations into a few kernels: the first batch of every new shape compiles (tens of
seconds), later ones run markedly faster.
"""

from __future__ import annotations

import torch
from torch import Tensor

_compiled: dict[str, object] = {}
_use_compiled = False


def use_compiled(enabled: bool) -> None:
    """Run the loops through ``torch.compile`` (True) or eagerly (False, the default)."""
    global _use_compiled
    _use_compiled = enabled


def _loop(fn):
    """``fn``, or its compiled version while ``use_compiled(True)`` is in force."""
    if not _use_compiled:
        return fn
    if fn.__name__ not in _compiled:
        _compiled[fn.__name__] = torch.compile(fn, fullgraph=True, dynamic=False)
    return _compiled[fn.__name__]


def _cell(gx: Tensor, gh: Tensor, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One GRU step from its gate pre-activations.

    gx [B, 3H] = W_i x + b_i, gh [B, 3H] = W_h h + b_h, h [B, H] ->
    (new state [B, H], reset and update gates rz [B, 2H], candidate n [B, H]).
    """
    size = h.shape[1]
    rz = torch.sigmoid(gx[:, : 2 * size] + gh[:, : 2 * size])
    n = torch.tanh(gx[:, 2 * size :] + rz[:, :size] * gh[:, 2 * size :])
    return n + rz[:, size:] * (h - n), rz, n


def _cell_backward(dh: Tensor, h: Tensor, rz: Tensor, n: Tensor, ghn: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients of one GRU step: dh [B, H] of its output, h its input state, rz, n its gates,
    ghn [B, H] = (W_h h + b_h)'s candidate part -> (d gx [B, 3H], d gh [B, 3H], the part of the
    input state's gradient that bypasses W_h [B, H])."""
    size = h.shape[1]
    r, z = rz[:, :size], rz[:, size:]
    dn = dh * (1 - z) * (1 - n * n)
    dz = dh * (h - n) * z * (1 - z)
    dr = dn * ghn * r * (1 - r)
    return torch.cat([dr, dz, dn], 1), torch.cat([dr, dz, dn * r], 1), dh * z


def _gru_forward(gi: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor):
    """gi [T, B, 3H], h0 [B, H] -> states [T + 1, B, H] (h0 first), rz [T, B, 2H], n and ghn
    [T, B, H]."""
    states, rzs, ns, ghns = [h0], [], [], []
    h = h0
    for gx in gi.unbind(0):
        gh = torch.addmm(b_hh, h, w_hh.t())
        h, rz, n = _cell(gx, gh, h)
        states.append(h)
        rzs.append(rz)
        ns.append(n)
        ghns.append(gh[:, 2 * h.shape[1] :])
    return torch.stack(states), torch.stack(rzs), torch.stack(ns), torch.stack(ghns)


def _gru_backward(d_out: Tensor, states: Tensor, rzs: Tensor, ns: Tensor, ghns: Tensor, w_hh: Tensor):
    """d_out [T, B, H] -> (d gi [T, B, 3H], d gh [T, B, 3H], d h0 [B, H])."""
    dh = torch.zeros_like(states[0])
    d_gx, d_gh = [], []
    for t in range(d_out.shape[0] - 1, -1, -1):
        gx, gh, dh = _cell_backward(dh + d_out[t], states[t], rzs[t], ns[t], ghns[t])
        dh = torch.addmm(dh, gh, w_hh)
        d_gx.append(gx)
        d_gh.append(gh)
    return torch.stack(d_gx[::-1]), torch.stack(d_gh[::-1]), dh


def _weight_grads(d_gh: Tensor, inputs: Tensor) -> tuple[Tensor, Tensor]:
    """d gh [T, B, G], inputs [T, B, K] -> (d W [G, K], d b [G]), summed over all steps."""
    flat = d_gh.reshape(-1, d_gh.shape[-1])
    return flat.t() @ inputs.reshape(-1, inputs.shape[-1]), flat.sum(0)


class GRUScan(torch.autograd.Function):
    """A GRU over precomputed input gates.

    forward(gi [T, B, 3H], h0 [B, H], w_hh [3H, H], b_hh [3H]) -> states [T, B, H].
    """

    @staticmethod
    def forward(ctx, gi, h0, w_hh, b_hh):
        states, rzs, ns, ghns = _loop(_gru_forward)(gi, h0, w_hh, b_hh)
        ctx.save_for_backward(states, rzs, ns, ghns, w_hh)
        return states[1:]

    @staticmethod
    def backward(ctx, d_out):
        states, rzs, ns, ghns, w_hh = ctx.saved_tensors
        d_gi, d_gh, d_h0 = _loop(_gru_backward)(d_out.contiguous(), states, rzs, ns, ghns, w_hh)
        d_w_hh, d_b_hh = _weight_grads(d_gh, states[:-1])
        return d_gi, d_h0, d_w_hh, d_b_hh


def _attentive_forward(gi, h0, memory, keys, mask, w_context, w_hh, b_hh):
    """The decoder's loop; see :class:`AttentiveGRUScan`. Returns states [T + 1, B, H],
    contexts [T, B, D], weights [T, B, L], rz [T, B, 2H], n and ghn [T, B, H]."""
    states, contexts, weights, rzs, ns, ghns = [h0], [], [], [], [], []
    h = h0
    for gx in gi.unbind(0):
        scores = torch.bmm(keys, h.unsqueeze(2)).squeeze(2)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        a = torch.softmax(scores, -1)
        c = torch.bmm(a.unsqueeze(1), memory).squeeze(1)
        gh = torch.addmm(b_hh, h, w_hh.t())
        h, rz, n = _cell(torch.addmm(gx, c, w_context.t()), gh, h)
        states.append(h)
        contexts.append(c)
        weights.append(a)
        rzs.append(rz)
        ns.append(n)
        ghns.append(gh[:, 2 * h.shape[1] :])
    return (torch.stack(states), torch.stack(contexts), torch.stack(weights), torch.stack(rzs),
            torch.stack(ns), torch.stack(ghns))  # fmt: skip


def _attentive_backward(d_states, d_contexts, d_weights, states, weights, rzs, ns, ghns, memory, keys, w_context, w_hh):
    """d states [T, B, H], d contexts [T, B, D], d weights [T, B, L] or None -> (d gi [T, B, 3H],
    d gh [T, B, 3H], d scores [T, B, L], d contexts in full [T, B, D], d h0 [B, H])."""
    dh = torch.zeros_like(states[0])
    d_gx, d_gh, d_scores, d_ctx = [], [], [], []
    for t in range(d_states.shape[0] - 1, -1, -1):
        gx, gh, dh = _cell_backward(dh + d_states[t], states[t], rzs[t], ns[t], ghns[t])
        dc = torch.addmm(d_contexts[t], gx, w_context)
        a = weights[t]
        da = torch.bmm(memory, dc.unsqueeze(2)).squeeze(2)
        if d_weights is not None:
            da = da + d_weights[t]
        ds = a * (da - (a * da).sum(-1, keepdim=True))
        dh = torch.addmm(dh, gh, w_hh) + torch.bmm(ds.unsqueeze(1), keys).squeeze(1)
        d_gx.append(gx)
        d_gh.append(gh)
        d_scores.append(ds)
        d_ctx.append(dc)
    return (torch.stack(d_gx[::-1]), torch.stack(d_gh[::-1]), torch.stack(d_scores[::-1]),
            torch.stack(d_ctx[::-1]), dh)  # fmt: skip


class AttentiveGRUScan(torch.autograd.Function):
    """A GRU decoder with dot-product attention, as the rnn decoder with the dot and scaled_dot
    scorers: at step t the query is the previous state h, the weights are
    a = softmax(scale * memory . h) over the unmasked positions, the context is c = a . memory,
    and the cell's input gates are gi[t] + W_c c.

    forward(gi [T, B, 3H], h0 [B, H], memory [B, L, D=H], mask bool [B, L] or None (True = may
    attend), w_context [3H, D], w_hh [3H, H], b_hh [3H], scale) ->
    (states [T, B, H], contexts [T, B, D], weights [T, B, L]).
    """

    @staticmethod
    def forward(ctx, gi, h0, memory, mask, w_context, w_hh, b_hh, scale):
        keys = memory * scale
        states, contexts, weights, rzs, ns, ghns = _loop(_attentive_forward)(
            gi, h0, memory, keys, mask, w_context, w_hh, b_hh
        )
        ctx.save_for_backward(states, contexts, weights, rzs, ns, ghns, memory, keys, w_context, w_hh)
        ctx.scale = scale
        return states[1:], contexts, weights

    @staticmethod
    def backward(ctx, d_states, d_contexts, d_weights):
        states, contexts, weights, rzs, ns, ghns, memory, keys, w_context, w_hh = ctx.saved_tensors
        d_states = torch.zeros_like(states[1:]) if d_states is None else d_states.contiguous()
        d_contexts = torch.zeros_like(contexts) if d_contexts is None else d_contexts.contiguous()
        d_weights = None if d_weights is None else d_weights.contiguous()
        d_gi, d_gh, d_scores, d_ctx, d_h0 = _loop(_attentive_backward)(
            d_states, d_contexts, d_weights, states, weights, rzs, ns, ghns, memory, keys, w_context, w_hh
        )
        d_w_hh, d_b_hh = _weight_grads(d_gh, states[:-1])
        d_w_context, _ = _weight_grads(d_gi, contexts)
        # memory is attended as keys (scaled) at every step and summed as values.
        d_memory = torch.einsum("tbl,tbh->blh", d_scores, states[:-1]) * ctx.scale
        d_memory = d_memory + torch.einsum("tbl,tbd->bld", weights, d_ctx)
        return d_gi, d_h0, d_memory, None, d_w_context, d_w_hh, d_b_hh, None
