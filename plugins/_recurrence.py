"""GRU recurrences as single autograd functions with hand-written backward passes.

Autograd through a step-by-step GRU records some thirty small operations per step and adds up
gradients step by step. These functions run the whole sequence in one forward loop and one
backward loop of a dozen operations each, and compute the weight gradients once for all steps
(one large matmul instead of one small one per step). The arithmetic is that of ``nn.GRUCell``.

Everything here is time-major: input gates [T, B, 3H], states [T, B, H].

Inside ``with compiled():`` both loops run through ``torch.compile``, which fuses each step's
elementwise operations into a few kernels: the first call with every new shape compiles (tens of
seconds, needs a C++ compiler), later ones run faster.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import Tensor

from attnlab.plugins.attention import masked_softmax

_compiled: dict[str, object] = {}
# Per thread (and task), so runs training side by side in threads each keep their own choice.
_use_compiled: ContextVar[bool] = ContextVar("attnlab_compiled_loops", default=False)


@contextmanager
def compiled(enabled: bool = True):
    """Run the loops through ``torch.compile`` inside this block (eagerly when not ``enabled``)."""
    token = _use_compiled.set(enabled)
    try:
        yield
    finally:
        _use_compiled.reset(token)


def _loop(fn):
    """``fn``, or its compiled version inside ``compiled()``."""
    if not _use_compiled.get():
        return fn
    if fn.__name__ not in _compiled:
        _compiled[fn.__name__] = torch.compile(fn, fullgraph=True, dynamic=False)
    return _compiled[fn.__name__]


def _gates(table: Tensor, tokens: Tensor, t: int) -> Tensor:
    """The input gates of step t, [B, G]: rows of the per-token gate table [V, G]."""
    return table[tokens[t]]


def _table_grad(d_gi: Tensor, tokens: Tensor, table: Tensor) -> Tensor:
    """d gi [T, B, G] summed into the rows of the gate table [V, G] that each token used."""
    flat = d_gi.reshape(-1, d_gi.shape[-1])
    return torch.zeros_like(table).index_add_(0, tokens.reshape(-1), flat)


def _dot_each(memory: Tensor, x: Tensor) -> Tensor:
    """memory [B, L, D] . x [B, D] -> [B, L]. As an elementwise product and sum: bmm of these
    shapes is several times slower on the CPU (the weighted sum over L is the other way round)."""
    return (memory * x.unsqueeze(1)).sum(-1)


def gru_cell(gx: Tensor, gh: Tensor, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
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


def _gru_forward(tokens: Tensor, table: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor):
    """tokens long [T, B], table [V, 3H], h0 [B, H] -> states [T + 1, B, H] (h0 first),
    rz [T, B, 2H], n and ghn [T, B, H]."""
    states, rzs, ns, ghns = [h0], [], [], []
    h = h0
    for t in range(tokens.shape[0]):
        gh = torch.addmm(b_hh, h, w_hh.t())
        h, rz, n = gru_cell(_gates(table, tokens, t), gh, h)
        states.append(h)
        rzs.append(rz)
        ns.append(n)
        ghns.append(gh[:, 2 * h.shape[1] :])
    return torch.stack(states), torch.stack(rzs), torch.stack(ns), torch.stack(ghns)


def gru_states(tokens: Tensor, table: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor) -> Tensor:
    """The GRU's forward pass alone, for inference (nothing kept for a backward pass):
    tokens long [T, B], table [V, 3H], h0 [B, H] -> states [T, B, H]."""
    states, h = [], h0
    for t in range(tokens.shape[0]):
        h = gru_cell(_gates(table, tokens, t), torch.addmm(b_hh, h, w_hh.t()), h)[0]
        states.append(h)
    return torch.stack(states)


def _gru_backward(d_out, states, rzs, ns, ghns, w_hh, need_h0: bool):
    """d_out [T, B, H] -> (d gi [T, B, 3H], d gh's candidate part [T, B, H] (see
    :func:`_hidden_weight_grad`), d b_hh [3H], d h0 [B, H] or None)."""
    dh = torch.zeros_like(states[0])
    d_gx, d_ghn = [], []
    for t in range(d_out.shape[0] - 1, -1, -1):
        gx, gh, dh = _cell_backward(dh + d_out[t], states[t], rzs[t], ns[t], ghns[t])
        if t > 0 or need_h0:
            dh = torch.addmm(dh, gh, w_hh)
        d_gx.append(gx)
        d_ghn.append(gh[:, 2 * dh.shape[1] :])
    d_gx, d_ghn = torch.stack(d_gx[::-1]), torch.stack(d_ghn[::-1])
    return d_gx, d_ghn, _hidden_bias_grad(d_gx, d_ghn), dh if need_h0 else None


def _weight_grad(d_gates: Tensor, inputs: Tensor) -> Tensor:
    """d gates [T, B, G], inputs [T, B, K] -> d W [G, K], summed over all steps."""
    return d_gates.reshape(-1, d_gates.shape[-1]).t() @ inputs.reshape(-1, inputs.shape[-1])


# d gh = [dr, dz, dn * r] shares its first two thirds with d gx = [dr, dz, dn]: only its candidate
# part d ghn [T, B, H] is kept, and the hidden weights' gradients are put together from both.


def _hidden_bias_grad(d_gx: Tensor, d_ghn: Tensor) -> Tensor:
    """d b_hh [3H] from d gx [T, B, 3H] and d ghn [T, B, H]."""
    size = d_ghn.shape[-1]
    return torch.cat([d_gx[..., : 2 * size].sum((0, 1)), d_ghn.sum((0, 1))])


def _hidden_weight_grad(d_gx: Tensor, d_ghn: Tensor, states: Tensor) -> Tensor:
    """d W_hh [3H, H] from d gx [T, B, 3H], d ghn [T, B, H] and the states the steps read."""
    size = d_ghn.shape[-1]
    return torch.cat([_weight_grad(d_gx[..., : 2 * size], states), _weight_grad(d_ghn, states)])


class GRUScan(torch.autograd.Function):
    """A GRU over tokens whose input gates (W_i x + b_i) are rows of a per-token table.

    forward(tokens long [T, B], table [V, 3H], h0 [B, H], w_hh [3H, H], b_hh [3H]) ->
    states [T, B, H].
    """

    @staticmethod
    def forward(ctx, tokens, table, h0, w_hh, b_hh):
        states, rzs, ns, ghns = _loop(_gru_forward)(tokens, table, h0, w_hh, b_hh)
        ctx.save_for_backward(tokens, table, states, rzs, ns, ghns, w_hh)
        return states[1:]

    @staticmethod
    def backward(ctx, d_out):
        tokens, table, states, rzs, ns, ghns, w_hh = ctx.saved_tensors
        d_gi, d_ghn, d_b_hh, d_h0 = _loop(_gru_backward)(
            d_out.contiguous(), states, rzs, ns, ghns, w_hh, ctx.needs_input_grad[2]
        )
        d_w_hh = _hidden_weight_grad(d_gi, d_ghn, states[:-1])
        return None, _table_grad(d_gi, tokens, table), d_h0, d_w_hh, d_b_hh


def _attentive_step(
    gx: Tensor,
    h: Tensor,
    memory: Tensor,
    mask: Tensor | None,
    w_context: Tensor,
    w_hh: Tensor,
    b_hh: Tensor,
    scale: float,
):
    """One step of :class:`AttentiveGRUScan`: gx [B, 3H] the token's input gates, h [B, H] the
    previous state -> (new state [B, H], context [B, D], weights [B, L], rz [B, 2H], n [B, H],
    ghn [B, H])."""
    a = masked_softmax(_dot_each(memory, h) * scale, mask)
    c = torch.bmm(a.unsqueeze(1), memory).squeeze(1)
    gh = torch.addmm(b_hh, h, w_hh.t())
    h, rz, n = gru_cell(torch.addmm(gx, c, w_context.t()), gh, h)
    return h, c, a, rz, n, gh[:, 2 * h.shape[1] :]


def _decoding_step(tokens, table, h, memory, mask, w_context, w_hh, b_hh, scale: float):
    h, c, a, *_ = _attentive_step(table[tokens], h, memory, mask, w_context, w_hh, b_hh, scale)
    return h, c, a


def attentive_step(
    tokens, table, h, memory, mask, w_context, w_hh, b_hh, scale: float
) -> tuple[Tensor, Tensor, Tensor]:
    """One decoding step of :class:`AttentiveGRUScan`'s recurrence, without autograd bookkeeping
    (compiled inside ``compiled()``): tokens long [B], table [V, 3H], h [B, H] -> (new state
    [B, H], context [B, D], weights [B, L])."""
    return _loop(_decoding_step)(tokens, table, h, memory, mask, w_context, w_hh, b_hh, scale)


def _attentive_forward(tokens, table, h0, memory, mask, w_context, w_hh, b_hh, scale: float):
    """The decoder's loop; see :class:`AttentiveGRUScan`. Returns features [T, B, H + D]
    (states and contexts side by side), states [T + 1, B, H] (h0 first), contexts [T, B, D],
    weights [T, B, L], rz [T, B, 2H], n and ghn [T, B, H]."""
    states, contexts, weights, rzs, ns, ghns = [h0], [], [], [], [], []
    h = h0
    for t in range(tokens.shape[0]):
        h, c, a, rz, n, ghn = _attentive_step(_gates(table, tokens, t), h, memory, mask, w_context, w_hh, b_hh, scale)
        states.append(h)
        contexts.append(c)
        weights.append(a)
        rzs.append(rz)
        ns.append(n)
        ghns.append(ghn)
    states, contexts = torch.stack(states), torch.stack(contexts)
    features = torch.cat([states[1:], contexts], dim=-1)
    return features, states, contexts, torch.stack(weights), torch.stack(rzs), torch.stack(ns), torch.stack(ghns)


def _attentive_backward(
    d_states, d_contexts, d_weights, states, weights, rzs, ns, ghns, memory, w_context, w_hh, scale: float
):
    """d states [T, B, H], d contexts [T, B, D], d weights [T, B, L] or None -> (d gi [T, B, 3H],
    d ghn [T, B, H], d b_hh [3H], d memory [B, L, D], d h0 [B, H])."""
    dh = torch.zeros_like(states[0])
    d_gx, d_ghn, d_scores, d_ctx = [], [], [], []
    for t in range(d_states.shape[0] - 1, -1, -1):
        gx, gh, dh = _cell_backward(dh + d_states[t], states[t], rzs[t], ns[t], ghns[t])
        dc = torch.addmm(d_contexts[t], gx, w_context)
        a = weights[t]
        da = _dot_each(memory, dc)
        if d_weights is not None:
            da = da + d_weights[t]
        ds = a * (da - (a * da).sum(-1, keepdim=True)) * scale  # d scores / scale
        dh = torch.addmm(dh, gh, w_hh) + torch.bmm(ds.unsqueeze(1), memory).squeeze(1)
        d_gx.append(gx)
        d_ghn.append(gh[:, 2 * dh.shape[1] :])
        d_scores.append(ds)
        d_ctx.append(dc)
    d_gx, d_ghn = torch.stack(d_gx[::-1]), torch.stack(d_ghn[::-1])
    # memory is attended as keys at every step and summed as values: [B, L, T] x [B, T, D].
    d_scores = torch.stack(d_scores[::-1]).permute(1, 2, 0)
    d_ctx = torch.stack(d_ctx[::-1]).transpose(0, 1)
    d_memory = torch.baddbmm(torch.bmm(d_scores, states[:-1].transpose(0, 1)), weights.permute(1, 2, 0), d_ctx)
    return d_gx, d_ghn, _hidden_bias_grad(d_gx, d_ghn), d_memory, dh


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
    def forward(ctx, tokens, table, h0, memory, mask, w_context, w_hh, b_hh, scale):
        features, states, contexts, weights, rzs, ns, ghns = _loop(_attentive_forward)(
            tokens, table, h0, memory, mask, w_context, w_hh, b_hh, scale
        )
        ctx.save_for_backward(tokens, table, states, contexts, weights, rzs, ns, ghns, memory, w_context, w_hh)
        ctx.scale = scale
        return features, weights

    @staticmethod
    def backward(ctx, d_features, d_weights):
        tokens, table, states, contexts, weights, rzs, ns, ghns, memory, w_context, w_hh = ctx.saved_tensors
        if d_features is None:
            d_features = torch.zeros_like(torch.cat([states[1:], contexts], dim=-1))
        size = states.shape[-1]
        d_gi, d_ghn, d_b_hh, d_memory, d_h0 = _loop(_attentive_backward)(
            d_features[..., :size], d_features[..., size:], d_weights,
            states, weights, rzs, ns, ghns, memory, w_context, w_hh, ctx.scale,
        )  # fmt: skip
        d_w_context = _weight_grad(d_gi, contexts)
        d_table = _table_grad(d_gi, tokens, table)
        d_w_hh = _hidden_weight_grad(d_gi, d_ghn, states[:-1])
        return None, d_table, d_h0, d_memory, None, d_w_context, d_w_hh, d_b_hh, None
