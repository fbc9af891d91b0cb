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

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, cast

import torch
from torch import Tensor

_Loop = TypeVar("_Loop", bound=Callable[..., Any])

_compiled: dict[str, Callable[..., Any]] = {}
# Per thread (and task), so runs training side by side in threads each keep their own choice.
_use_compiled: ContextVar[bool] = ContextVar("attnlab_compiled_loops", default=False)


@contextmanager
def compiled(enabled: bool = True) -> Iterator[None]:
    """Run the loops through ``torch.compile`` inside this block (eagerly when not ``enabled``)."""
    token = _use_compiled.set(enabled)
    try:
        yield
    finally:
        _use_compiled.reset(token)


def loop(fn: _Loop) -> _Loop:
    """``fn``, or its compiled version (same signature) inside ``compiled()``."""
    if not _use_compiled.get():
        return fn
    if fn.__name__ not in _compiled:
        _compiled[fn.__name__] = _eager_past_the_limit(fn, torch.compile(fn, fullgraph=True, dynamic=False))
    return cast(_Loop, _compiled[fn.__name__])


def _eager_past_the_limit(fn: _Loop, compiled_fn: Callable[..., Any]) -> Callable[..., Any]:
    """``compiled_fn``, running ``fn`` eagerly for a shape met once torch.compile's recompile
    limit is reached (``torch._dynamo.config.recompile_limit``, 8 by default). The loops are
    unrolled over the sequence length, so every length is one compilation: data of varying
    lengths (cmudict, a user's file) compiles its first 8 batch shapes per loop, and the rest run
    as they would without ``compile_loops`` instead of failing."""
    from torch._dynamo.exc import FailOnRecompileLimitHit

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return compiled_fn(*args, **kwargs)
        except FailOnRecompileLimitHit:  # raised before anything runs: nothing to undo
            return fn(*args, **kwargs)

    return run


def gates(table: Tensor, tokens: Tensor, t: int) -> Tensor:
    """The input gates of step t, [B, G]: rows of the per-token gate table [V, G]."""
    return table[tokens[t]]


def table_grad(d_gi: Tensor, tokens: Tensor, table: Tensor) -> Tensor:
    """d gi [T, B, G] summed into the rows of the gate table [V, G] that each token used."""
    flat = d_gi.reshape(-1, d_gi.shape[-1])
    return torch.zeros_like(table).index_add_(0, tokens.reshape(-1), flat)


def gru_cell(gx: Tensor, gh: Tensor, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """One GRU step from its gate pre-activations.

    gx [B, 3H] = W_i x + b_i, gh [B, 3H] = W_h h + b_h, h [B, H] ->
    (new state [B, H], reset and update gates rz [B, 2H], candidate n [B, H]).
    """
    size = h.shape[1]
    rz = torch.sigmoid(gx[:, : 2 * size] + gh[:, : 2 * size])
    n = torch.tanh(gx[:, 2 * size :] + rz[:, :size] * gh[:, 2 * size :])
    return n + rz[:, size:] * (h - n), rz, n


def cell_backward(dh: Tensor, h: Tensor, rz: Tensor, n: Tensor, ghn: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Gradients of one GRU step: dh [B, H] of its output, h its input state, rz, n its gates,
    ghn [B, H] = (W_h h + b_h)'s candidate part -> (d gx [B, 3H], d gh [B, 3H], the part of the
    input state's gradient that bypasses W_h [B, H])."""
    size = h.shape[1]
    r, z = rz[:, :size], rz[:, size:]
    dn = dh * (1 - z) * (1 - n * n)
    dz = dh * (h - n) * z * (1 - z)
    dr = dn * ghn * r * (1 - r)
    return torch.cat([dr, dz, dn], 1), torch.cat([dr, dz, dn * r], 1), dh * z


def _gru_forward(tokens: Tensor, table: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """tokens long [T, B], table [V, 3H], h0 [B, H] -> states [T + 1, B, H] (h0 first),
    rz [T, B, 2H], n and ghn [T, B, H]."""
    states = [h0]
    rzs: list[Tensor] = []
    ns: list[Tensor] = []
    ghns: list[Tensor] = []
    h = h0
    for t in range(tokens.shape[0]):
        gh = torch.addmm(b_hh, h, w_hh.t())
        h, rz, n = gru_cell(gates(table, tokens, t), gh, h)
        states.append(h)
        rzs.append(rz)
        ns.append(n)
        ghns.append(gh[:, 2 * h.shape[1] :])
    return torch.stack(states), torch.stack(rzs), torch.stack(ns), torch.stack(ghns)


def gru_states(tokens: Tensor, table: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor) -> Tensor:
    """The GRU's forward pass alone, for inference (nothing kept for a backward pass):
    tokens long [T, B], table [V, 3H], h0 [B, H] -> states [T, B, H]."""
    states: list[Tensor] = []
    h = h0
    for t in range(tokens.shape[0]):
        h = gru_cell(gates(table, tokens, t), torch.addmm(b_hh, h, w_hh.t()), h)[0]
        states.append(h)
    return torch.stack(states)


def _gru_backward(
    d_out: Tensor, states: Tensor, rzs: Tensor, ns: Tensor, ghns: Tensor, w_hh: Tensor, need_h0: bool
) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """d_out [T, B, H] -> (d gi [T, B, 3H], d gh's candidate part [T, B, H] (see
    :func:`hidden_weight_grad`), d b_hh [3H], d h0 [B, H] or None)."""
    dh = torch.zeros_like(states[0])
    gx_steps: list[Tensor] = []
    ghn_steps: list[Tensor] = []
    for t in range(d_out.shape[0] - 1, -1, -1):
        gx, gh, dh = cell_backward(dh + d_out[t], states[t], rzs[t], ns[t], ghns[t])
        if t > 0 or need_h0:
            dh = torch.addmm(dh, gh, w_hh)
        gx_steps.append(gx)
        ghn_steps.append(gh[:, 2 * dh.shape[1] :])
    d_gx, d_ghn = torch.stack(gx_steps[::-1]), torch.stack(ghn_steps[::-1])
    return d_gx, d_ghn, hidden_bias_grad(d_gx, d_ghn), dh if need_h0 else None


def weight_grad(d_gates: Tensor, inputs: Tensor) -> Tensor:
    """d gates [T, B, G], inputs [T, B, K] -> d W [G, K], summed over all steps."""
    return d_gates.reshape(-1, d_gates.shape[-1]).t() @ inputs.reshape(-1, inputs.shape[-1])


# d gh = [dr, dz, dn * r] shares its first two thirds with d gx = [dr, dz, dn]: only its candidate
# part d ghn [T, B, H] is kept, and the hidden weights' gradients are put together from both.


def hidden_bias_grad(d_gx: Tensor, d_ghn: Tensor) -> Tensor:
    """d b_hh [3H] from d gx [T, B, 3H] and d ghn [T, B, H]."""
    size = d_ghn.shape[-1]
    return torch.cat([d_gx[..., : 2 * size].sum((0, 1)), d_ghn.sum((0, 1))])


def hidden_weight_grad(d_gx: Tensor, d_ghn: Tensor, states: Tensor) -> Tensor:
    """d W_hh [3H, H] from d gx [T, B, 3H], d ghn [T, B, H] and the states the steps read."""
    size = d_ghn.shape[-1]
    return torch.cat([weight_grad(d_gx[..., : 2 * size], states), weight_grad(d_ghn, states)])


class GRUScan(torch.autograd.Function):
    """A GRU over tokens whose input gates (W_i x + b_i) are rows of a per-token table.

    forward(tokens long [T, B], table [V, 3H], h0 [B, H], w_hh [3H, H], b_hh [3H]) ->
    states [T, B, H].
    """

    @staticmethod
    def forward(ctx: Any, tokens: Tensor, table: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor) -> Tensor:
        states, rzs, ns, ghns = loop(_gru_forward)(tokens, table, h0, w_hh, b_hh)
        ctx.save_for_backward(tokens, table, states, rzs, ns, ghns, w_hh)
        return states[1:]

    @staticmethod
    def backward(ctx: Any, d_out: Tensor) -> tuple[None, Tensor, Tensor | None, Tensor, Tensor]:
        tokens, table, states, rzs, ns, ghns, w_hh = ctx.saved_tensors
        d_gi, d_ghn, d_b_hh, d_h0 = loop(_gru_backward)(d_out.contiguous(), states, rzs, ns, ghns, w_hh, ctx.needs_input_grad[2])
        d_w_hh = hidden_weight_grad(d_gi, d_ghn, states[:-1])
        return None, table_grad(d_gi, tokens, table), d_h0, d_w_hh, d_b_hh


def gru_scan(tokens: Tensor, table: Tensor, h0: Tensor, w_hh: Tensor, b_hh: Tensor) -> Tensor:
    """:class:`GRUScan` applied (differentiable): tokens long [T, B], table [V, 3H], h0 [B, H],
    w_hh [3H, H], b_hh [3H] -> states [T, B, H]."""
    states: Tensor = GRUScan.apply(tokens, table, h0, w_hh, b_hh)  # type: ignore[no-untyped-call]  # torch leaves Function.apply unannotated
    return states
