"""Built-in scorers: none, dot, scaled_dot, general, additive, multihead.

Shapes throughout: query [B, Lq, Dq], keys [B, Lk, Dk], values [B, Lk, Dv], mask bool [B, Lk].
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.plugins.attention import (
    Attention,
    AttentionOutput,
    dot_scores,
    masked_softmax,
    weighted_sum,
)
from attnlab.plugins.options import require_positive_int, require_probability


def _require_equal_dims(scorer: Attention) -> None:
    if scorer.query_dim != scorer.key_dim:
        raise ValueError(
            f"{type(scorer).__name__} needs query_dim == key_dim, got {scorer.query_dim} and "
            f"{scorer.key_dim}; use 'general', 'additive' or 'multihead' for unequal sizes"
        )


def _unchanged(scorer: Attention, cls: type[Attention]) -> bool:
    """True when ``scorer``'s class overrides none of ``cls``'s scoring methods (a subclass that
    redefines the score must not inherit a fast path)."""
    return all(getattr(type(scorer), name) is getattr(cls, name) for name in ("score", "forward", "context_only"))


class NoAttention(Attention):
    """The bottleneck baseline: no attention at all. The context is all zeros, so a decoder
    lives on the encoder summary it started from."""

    attends = False

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> AttentionOutput:
        context = values.new_zeros(query.shape[0], query.shape[1], values.shape[-1])
        return AttentionOutput(context, None)


class DotAttention(Attention):
    """Luong dot score: ``q . k``."""

    def __init__(self, query_dim: int, key_dim: int, **options: Any) -> None:
        super().__init__(query_dim, key_dim, **options)
        _require_equal_dims(self)

    def score(self, query: Tensor, keys: Tensor) -> Tensor:
        return dot_scores(query, keys)

    def dot_scale(self) -> float | None:
        return 1.0 if _unchanged(self, DotAttention) else None


class ScaledDotAttention(Attention):
    """Transformer score: ``q . k / sqrt(d_k)``.

    When the weights are not needed (training), several queries at once go through torch's fused
    scaled_dot_product_attention; a single query (a decoder step) is faster on the explicit path.
    """

    def __init__(self, query_dim: int, key_dim: int, **options: Any) -> None:
        super().__init__(query_dim, key_dim, **options)
        _require_equal_dims(self)

    def score(self, query: Tensor, keys: Tensor) -> Tensor:
        return dot_scores(query, keys) / math.sqrt(self.key_dim)

    def dot_scale(self) -> float | None:
        return 1 / math.sqrt(self.key_dim) if _unchanged(self, ScaledDotAttention) else None

    def context_only(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> Tensor:
        if query.shape[1] == 1:
            return self.forward(query, keys, values, mask).context
        attn_mask = None if mask is None else mask[:, None, :]  # [B, 1, Lk], broadcast over Lq
        return F.scaled_dot_product_attention(query, keys, values, attn_mask=attn_mask)


class GeneralAttention(Attention):
    """Luong general (bilinear) score: ``q W k``, W of shape [Dq, Dk]."""

    def __init__(self, query_dim: int, key_dim: int, **options: Any) -> None:
        super().__init__(query_dim, key_dim, **options)
        self.W = nn.Linear(key_dim, query_dim, bias=False)

    def score(self, query: Tensor, keys: Tensor) -> Tensor:
        return dot_scores(query, self.per_keys("W", keys, self.W))


class AdditiveAttention(Attention):
    """Bahdanau additive score: ``v . tanh(W_q q + W_k k)``.

    Options:
        attention_dim: size of the hidden layer (default: key_dim).
    """

    def __init__(self, query_dim: int, key_dim: int, attention_dim: int | None = None, **options: Any) -> None:
        super().__init__(query_dim, key_dim, **options)
        attention_dim = key_dim if attention_dim is None else attention_dim
        require_positive_int(attention_dim=attention_dim)
        self.W_q = nn.Linear(query_dim, attention_dim, bias=False)
        self.W_k = nn.Linear(key_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)

    def score(self, query: Tensor, keys: Tensor) -> Tensor:
        # [B, Lq, 1, A] + [B, 1, Lk, A] -> [B, Lq, Lk, A] -> [B, Lq, Lk]
        keys_part = self.per_keys("W_k", keys, self.W_k)
        hidden = torch.tanh(self.W_q(query).unsqueeze(2) + keys_part.unsqueeze(1))
        scores: Tensor = self.v(hidden).squeeze(-1)
        return scores


class MultiHeadAttention(Attention):
    """Multi-head scaled-dot attention as in "Attention Is All You Need".

    Queries, keys and values are projected to ``model_dim`` (default: query_dim), split into
    ``heads`` subspaces, attended per head, concatenated and projected again. The context has
    size ``model_dim``; ``weights`` is the mean over heads and ``head_weights`` keeps each head.

    Options:
        heads: number of heads (default 4); must divide model_dim.
        model_dim: size of the projected space (default: query_dim).
        dropout: dropout on the attention weights while training (default 0).
    """

    def __init__(
        self,
        query_dim: int,
        key_dim: int,
        heads: int = 4,
        model_dim: int | None = None,
        dropout: float = 0.0,
        **options: Any,
    ) -> None:
        super().__init__(query_dim, key_dim, **options)
        model_dim = query_dim if model_dim is None else model_dim
        require_positive_int(heads=heads, model_dim=model_dim)
        require_probability(dropout=dropout)
        if model_dim % heads:
            raise ValueError(
                f"heads={heads} does not divide model_dim={model_dim}; "
                f"choose heads among {[h for h in range(1, model_dim + 1) if model_dim % h == 0]}"
            )
        self.heads = heads
        self.head_dim = model_dim // heads
        self.dropout = dropout
        self.q_proj = nn.Linear(query_dim, model_dim)
        self.k_proj = nn.Linear(key_dim, model_dim)
        self.v_proj = nn.Linear(key_dim, model_dim)
        self.out_proj = nn.Linear(model_dim, model_dim)
        self.output_dim = model_dim

    def _split(self, x: Tensor) -> Tensor:
        """[B, L, H * Dh] -> [B, H, L, Dh]."""
        return x.view(x.shape[0], x.shape[1], self.heads, self.head_dim).transpose(1, 2)

    def _merge(self, x: Tensor) -> Tensor:
        """[B, H, L, Dh] -> [B, L, H * Dh]."""
        return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)

    def _per_source(self, name: str, keys: Tensor, project: nn.Linear) -> Tensor:
        """``project(keys)`` split into heads, [B, H, Lk, Dh], once per source (``per_keys``) and
        contiguous, so that every decoder step's batched products read it without a copy."""
        return self.per_keys(name, keys, lambda x: self._split(project(x)).contiguous())

    def score(self, query: Tensor, keys: Tensor) -> Tensor:
        """Head-averaged energies [B, Lq, Lk] (for inspection; forward works per head)."""
        q = self._split(self.q_proj(query))
        k = self._per_source("k", keys, self.k_proj)
        return (dot_scores(q, k) / math.sqrt(self.head_dim)).mean(dim=1)

    def forward(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> AttentionOutput:
        q = self._split(self.q_proj(query))  # [B, H, Lq, Dh]
        k = self._per_source("k", keys, self.k_proj)  # [B, H, Lk, Dh]
        v = self._per_source("v", values, self.v_proj)
        head_weights = masked_softmax(dot_scores(q, k) / math.sqrt(self.head_dim), mask)
        dropped = F.dropout(head_weights, self.dropout, self.training)
        context = self.out_proj(self._merge(weighted_sum(dropped, v)))
        return AttentionOutput(context, head_weights.mean(dim=1), head_weights)

    def context_only(self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor | None = None) -> Tensor:
        if query.shape[1] == 1:
            return self.forward(query, keys, values, mask).context
        q = self._split(self.q_proj(query))
        k = self._per_source("k", keys, self.k_proj)
        v = self._per_source("v", values, self.v_proj)
        attn_mask = None if mask is None else mask[:, None, None, :]  # [B, 1, 1, Lk]
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=self.dropout if self.training else 0.0)
        context: Tensor = self.out_proj(self._merge(heads))
        return context
