"""The encoder contract: source tokens in, one vector per position plus a summary out."""

from __future__ import annotations

from typing import NamedTuple

from torch import Tensor, nn

from attnlab.plugins.options import option_names, reject_unknown, require_positive_int

_FIXED = ("vocab_size", "embedding_dim", "hidden_size")


class EncoderOutput(NamedTuple):
    """outputs: [B, Ls, D] one vector per source position (keys and values of the attention).
    summary: [B, D] fixed-size vector of the whole source: all a decoder without attention has.
    """

    outputs: Tensor
    summary: Tensor


class Encoder(nn.Module):
    """Base class of every encoder plugin.

    Args:
        vocab_size: number of source token ids (PAD is id 0).
        embedding_dim: size of the token embeddings.
        hidden_size: size of the hidden state.
        **options: encoder-specific options; unknown ones are an error.

    Subclasses set ``self.output_dim`` (D) and implement :meth:`forward`.
    """

    def __init__(self, vocab_size: int, embedding_dim: int, hidden_size: int, **options) -> None:
        super().__init__()
        reject_unknown(type(self), options, _FIXED)
        require_positive_int(
            vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_size=hidden_size
        )
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hidden_size = hidden_size
        self.output_dim = hidden_size

    @classmethod
    def option_names(cls) -> list[str]:
        """Names of the options this encoder accepts."""
        return option_names(cls, _FIXED)

    def forward(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        """src: long [B, Ls]; src_mask: bool [B, Ls], True on real tokens (False on padding).

        Outputs at padded positions are ignored downstream; the output at a real position must
        not depend on how much padding follows it.
        """
        raise NotImplementedError
