"""What the built-in transformer encoder and decoder share: their options' checks and their input,
token embeddings projected to ``hidden_size`` plus fixed sinusoidal positions."""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnlab.plugins.options import require_positive_int, require_probability
from attnlab.plugins.tokens import PAD_ID


def check_transformer_options(
    hidden_size: int, layers: int, heads: int, feedforward_dim: int | None, dropout: float, max_length: int
) -> int:
    """Validate the options shared by the Transformer encoder and decoder; returns the
    feed-forward size (default 2 * hidden_size)."""
    feedforward_dim = 2 * hidden_size if feedforward_dim is None else feedforward_dim
    require_positive_int(layers=layers, heads=heads, feedforward_dim=feedforward_dim, max_length=max_length)
    require_probability(dropout=dropout)
    if hidden_size % heads:
        raise ValueError(f"heads={heads} does not divide hidden_size={hidden_size}")
    return feedforward_dim


def sinusoidal_positions(length: int, dim: int) -> Tensor:
    """The Transformer's fixed position encodings, [length, dim]."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq[: dim // 2])
    return table


class TransformerInput(nn.Module):
    """Mixin of a transformer plugin: :meth:`_init_input` makes its ``embedding``, ``project``
    and ``positions`` (the names its saved weights carry), :meth:`_embed` turns tokens into the
    first layer's input."""

    embedding: nn.Embedding
    project: nn.Linear
    positions: Tensor
    max_length: int

    def _init_input(self, vocab_size: int, embedding_dim: int, hidden_size: int, max_length: int) -> None:
        self.max_length = max_length
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD_ID)
        self.project = nn.Linear(embedding_dim, hidden_size)
        self.register_buffer("positions", sinusoidal_positions(max_length, hidden_size), persistent=False)

    def _embed(self, tokens: Tensor, side: str, start: int = 0) -> Tensor:
        """tokens long [B, L] at positions ``start`` .. ``start + L - 1`` -> [B, L, hidden_size];
        ValueError beyond ``max_length``, naming ``side`` ("source" for an encoder, "target" for a
        decoder)."""
        length = start + tokens.shape[1]
        if length > self.max_length:
            plugin = "encoder" if side == "source" else "decoder"
            raise ValueError(f"{side} length {length} exceeds this {plugin}'s max_length {self.max_length}")
        embedded: Tensor = self.project(self.embedding(tokens))
        return embedded + self.positions[start:length]
