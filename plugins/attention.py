"""The attention (scorer) contract: score, mask, softmax, weighted sum.

A scorer plugin subclasses :class:`Attention` and is registered under the entry-point group
``attnlab.scorers``. Overriding :meth:`Attention.score` alone gives a complete, trainable scorer;
overriding :meth:`Attention.forward` gives full control (multi-head, fused kernels).

A worked plugin: cosine similarity of query and keys, sharpened by a temperature (its option)::

    import torch.nn.functional as F
    from attnlab.plugins import Attention, dot_scores


    class CosineAttention(Attention):
        def __init__(self, query_dim: int, key_dim: int, temperature: float = 10.0, **options) -> None:
            super().__init__(query_dim, key_dim, **options)  # refuses unknown options, listing these
            if query_dim != key_dim:
                raise ValueError(f"cosine needs query_dim == key_dim, got {query_dim} and {key_dim}")
            if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or temperature <= 0:
                raise ValueError(f"temperature must be a positive number, got {temperature!r}")
            self.temperature = float(temperature)

        def score(self, query, keys):  # [B, Lq, Dq], [B, Lk, Dk] -> [B, Lq, Lk]
            return self.temperature * dot_scores(F.normalize(query, dim=-1), F.normalize(keys, dim=-1))

Declared in its package's ``pyproject.toml`` as ``[project.entry-points."attnlab.scorers"]``
``cosine = "attnlab_cosine:CosineAttention"``, it is used as ``attnlab train --scorer cosine
-o scorer.temperature=5``.

What a scorer author needs to know:

- **Options** are the keyword parameters of ``__init__`` after ``query_dim`` and ``key_dim``, each
  with a default; pass ``**options`` on to ``super().__init__``, which rejects unknown names with a
  message listing yours (``option_names()``). Values come from a config's ``scorer_options`` or
  ``-o scorer.NAME=VALUE`` and arrive YAML-typed: ``5`` an int, ``0.1`` a float, ``true`` a bool,
  ``[1, 2]`` a list, anything else a str. Validate them in ``__init__`` and raise ValueError (the
  CLI reports it as one line); ``require_positive_int`` and ``require_probability`` from
  ``attnlab.plugins`` do the common cases.
- **Sizes** are the decoder's choice: ``make_attention(query_dim, key_dim)``. The built-in
  decoders pass the decoder state size and the encoder's ``output_dim``, which may differ. A
  scorer that needs them equal raises ValueError in ``__init__`` when they are not. Set
  ``self.output_dim`` when the context is not ``key_dim`` wide (``multihead`` does).
- **score(query, keys)** gets query [B, Lq, Dq] and keys [B, Lk, Dk] and returns raw energies
  [B, Lq, Lk] (not [B, Lk, Lq]). It never sees the mask: the base :meth:`Attention.forward`
  applies it after scoring. A scorer that needs the mask (local windows, key-dependent
  normalisation) overrides ``forward``. ``Lq`` is 1 at every step of the rnn decoder and the
  target length in the transformer decoder; each query is attended independently of the others.
- **forward(query, keys, values, mask=None)**: values [B, Lk, Dv] (the built-in decoders pass
  the encoder outputs as both keys and values); mask bool [B, Lk], True where a key may be
  attended, or None (attend to all). Returns ``AttentionOutput(context [B, Lq, output_dim],
  weights [B, Lq, Lk], head_weights [B, H, Lq, Lk] or None)``; weights are non-negative, sum to 1
  over the unmasked keys and are exactly 0 on masked ones: :func:`masked_softmax` takes the
  scores and the [B, Lk] mask and does it. A scorer that does not attend sets the class attribute
  ``attends = False`` and returns weights None.
- **Helpers**: :func:`masked_softmax`, :func:`dot_scores` (q . k, fast for Lq = 1),
  :func:`weighted_sum` (weights x values), :meth:`Attention.per_keys` (compute a projection of
  the keys once per source, not once per decoder step). Optional fast paths:
  :meth:`Attention.context_only` (the context alone, for training) and :meth:`Attention.dot_scale`.
- **Checks**: every model built probes its scorer once on a tiny batch and stops with a
  one-line error naming the plugin if it breaks any of the above; ``attnlab plugins --check``
  does it for every installed scorer, and ``attnlab.plugins.testing.check_scorer(CosineAttention)`` from
  the plugin's own tests (it also checks that gradients reach every parameter).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from attnlab.plugins.options import Configurable, reject_unknown, require_positive_int


class AttentionOutput(NamedTuple):
    """What an attention call returns.

    context:      [B, Lq, Dv] weighted sum of the values.
    weights:      [B, Lq, Lk] attention distribution per query (rows sum to 1 over unmasked keys,
                  exactly 0 on masked keys), or None for a scorer that does not attend.
    head_weights: [B, H, Lq, Lk] per-head weights of a multi-head scorer, else None.
    """

    context: Tensor
    weights: Tensor | None
    head_weights: Tensor | None = None


def masked_softmax(scores: Tensor, mask: Tensor | None) -> Tensor:
    """Softmax over the last axis that puts exactly zero weight on masked keys.

    scores: [..., Lq, Lk] raw energies; mask: bool [B, Lk] (True = may attend), broadcast over
    every axis between the batch and the keys. Returns weights of the same shape as ``scores``.
    """
    if mask is not None:
        keep = mask.view(mask.shape[0], *([1] * (scores.dim() - 2)), mask.shape[-1])
        scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        # The finfo.min fill already underflows to 0; this makes it exact for any dtype.
        weights = weights.masked_fill(~keep, 0.0)
    return weights


def dot_scores(query: Tensor, keys: Tensor) -> Tensor:
    """query [..., Lq, D] . keys [..., Lk, D] -> [..., Lq, Lk].

    A decoder step has Lq = 1: while training, that batched mat-vec runs several times faster
    (forward and backward) as an elementwise product and sum than as bmm on the CPU. Without
    autograd (decoding) bmm is the faster one, 2-5x at beam search's sizes (5,120 rows).
    """
    if query.shape[-2] == 1 and torch.is_grad_enabled():
        return (keys * query).sum(-1).unsqueeze(-2)
    return query @ keys.transpose(-2, -1)


def weighted_sum(weights: Tensor, values: Tensor) -> Tensor:
    """weights [..., Lq, Lk] x values [..., Lk, Dv] -> context [..., Lq, Dv] (fast path as above)."""
    if weights.shape[-2] == 1 and torch.is_grad_enabled():
        return (weights.transpose(-2, -1) * values).sum(-2, keepdim=True)
    return weights @ values


class Attention(Configurable, nn.Module):
    """Base class of every scorer plugin.

    Args:
        query_dim: size Dq of each query vector (the decoder state).
        key_dim: size Dk of each key vector (the encoder output); values have the same size.
        **options: scorer-specific options; unknown ones are an error.

    Attributes:
        output_dim: size Dv of the context vectors this scorer returns (``key_dim`` by default).
        attends: False only for the no-attention baseline, whose weights are None.
    """

    attends: bool = True
    _fixed = ("query_dim", "key_dim")

    def __init__(self, query_dim: int, key_dim: int, **options: Any) -> None:
        super().__init__()
        reject_unknown(type(self), options, self._fixed)
        require_positive_int(query_dim=query_dim, key_dim=key_dim)
        self.query_dim = query_dim
        self.key_dim = key_dim
        self.output_dim = key_dim
        self._memo: dict[str, tuple[weakref.ref[Tensor], tuple[object, ...], Tensor]] = {}

    def per_keys(self, name: str, keys: Tensor, compute: Callable[[Tensor], Tensor]) -> Tensor:
        """``compute(keys)``, computed once while the same, unmodified ``keys`` tensor is attended
        again: a decoder attends to one encoder output at every step, so projections of the keys
        (W_k k in additive attention, the key/value projections of multi-head) need not be redone
        per step. Autograd is unaffected: the gradient of every step flows into the one result.
        """
        # Valid while: the same keys object, not modified in place, no parameter updated since
        # (optimizers update in place, which bumps _version), same grad mode.
        version = -1 if keys.is_inference() else keys._version  # inference tensors keep none
        stamp = (version, torch.is_grad_enabled(), tuple(p._version for p in self.parameters()))
        hit = self._memo.get(name)
        if hit is not None and hit[0]() is keys and hit[1] == stamp:
            return hit[2]
        value = compute(keys)
        self._memo[name] = (weakref.ref(keys), stamp, value)
        return value

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_memo": {}}  # weak references do not pickle; the memo is a cache

    def score(self, query: Tensor, keys: Tensor) -> Tensor:
        """Raw energies. query [B, Lq, Dq], keys [B, Lk, Dk] -> [B, Lq, Lk]."""
        raise NotImplementedError(f"{type(self).__name__} must override score() or forward()")

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> AttentionOutput:
        """query [B, Lq, Dq], keys [B, Lk, Dk], values [B, Lk, Dv], mask bool [B, Lk]."""
        weights = masked_softmax(self.score(query, keys), mask)
        return AttentionOutput(weighted_sum(weights, values), weights)

    def dot_scale(self) -> float | None:
        """``s`` when this scorer's weights are exactly ``softmax(s * q . k)`` over the unmasked
        keys and its context is their weighted sum of the values, else None (the default).
        A recurrent decoder then runs all its steps in one fused loop."""
        return None

    def context_only(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> Tensor:
        """The context [B, Lq, Dv] alone, for training where the weights are not needed.

        Equal to ``forward(...).context``; a scorer may override it with a fused kernel.
        """
        return self.forward(query, keys, values, mask).context
