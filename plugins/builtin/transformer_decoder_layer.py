"""One layer of the built-in transformer decoder, for teacher forcing (every position at once) and
for incremental decoding (one new position over the cached keys and values of the earlier ones).

Shapes: x [B, Lt, size]; memory [B, Ls, D]; src_mask bool [B, Ls]; a layer's cache [B, 2, H, t, Dh]
(its self-attention's keys, then values, at the t positions decoded so far; H heads of Dh).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.plugins.attention import Attention, AttentionOutput


class TransformerDecoderLayer(nn.Module):
    """Pre-norm layer: masked self-attention, cross-attention through the scorer, feed-forward."""

    def __init__(self, size: int, heads: int, feedforward_dim: int, dropout: float, cross: Attention) -> None:
        super().__init__()
        self.self_norm = nn.LayerNorm(size)
        self.self_attn = nn.MultiheadAttention(size, heads, dropout=dropout, batch_first=True)
        self.cross_norm = nn.LayerNorm(size)
        self.cross = cross
        self.cross_out = nn.Linear(cross.output_dim, size)
        self.ff_norm = nn.LayerNorm(size)
        self.ff = nn.Sequential(nn.Linear(size, feedforward_dim), nn.ReLU(), nn.Dropout(dropout), nn.Linear(feedforward_dim, size))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, causal: Tensor, memory: Tensor, src_mask: Tensor, need_weights: bool) -> tuple[Tensor, AttentionOutput]:
        """x [B, Lt, size], causal bool [Lt, Lt] (True = blocked), memory [B, Ls, D]."""
        h = self.self_norm(x)
        x = x + self.dropout(self.self_attn(h, h, h, attn_mask=causal, need_weights=False)[0])
        return self._cross_and_feed_forward(x, memory, src_mask, need_weights)

    def empty_cache(self, batch: int, like: Tensor) -> Tensor:
        """The cache before the first position: [batch, 2, H, 0, Dh], ``like``'s dtype and device."""
        attn = self.self_attn
        return like.new_zeros(batch, 2, attn.num_heads, 0, attn.head_dim)

    def step(self, x: Tensor, cache: Tensor, memory: Tensor, src_mask: Tensor) -> tuple[Tensor, Tensor, AttentionOutput]:
        """The next position. x [B, 1, size]: its input; cache [B, 2, H, t, Dh]: the self-attention's
        keys and values at the t earlier positions. Returns the layer's output [B, 1, size], the
        cache with this position appended [B, 2, H, t + 1, Dh], and the cross-attention (Lq = 1).

        The self-attention is that of :meth:`forward` for the last of t + 1 positions (the causal
        mask lets it see them all): ``self_attn``'s own projections, torch's
        scaled_dot_product_attention over the cached keys and values.
        """
        attn = self.self_attn
        batch, size = x.shape[0], x.shape[2]
        projected = F.linear(self.self_norm(x), attn.in_proj_weight, attn.in_proj_bias)  # [B, 1, 3 * size]
        qkv = projected.view(batch, 3, attn.num_heads, 1, attn.head_dim)  # [B, 3, H, 1, Dh]: q, k, v
        cache = torch.cat([cache, qkv[:, 1:]], dim=3)
        dropout = attn.dropout if self.training else 0.0
        mixed = F.scaled_dot_product_attention(qkv[:, 0], cache[:, 0], cache[:, 1], dropout_p=dropout)  # [B, H, 1, Dh]
        x = x + self.dropout(attn.out_proj(mixed.reshape(batch, 1, size)))
        x, cross = self._cross_and_feed_forward(x, memory, src_mask, need_weights=True)
        return x, cache, cross

    def _cross_and_feed_forward(self, x: Tensor, memory: Tensor, src_mask: Tensor, need_weights: bool) -> tuple[Tensor, AttentionOutput]:
        """The layer after its self-attention: x [B, Lt, size] -> [B, Lt, size] and the cross-attention."""
        h = self.cross_norm(x)
        if need_weights:
            attn: AttentionOutput = self.cross(h, memory, memory, src_mask)
        else:
            attn = AttentionOutput(self.cross.context_only(h, memory, memory, src_mask), None)
        x = x + self.dropout(self.cross_out(attn.context))
        x = x + self.dropout(self.ff(self.ff_norm(x)))
        return x, attn
