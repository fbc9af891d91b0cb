"""The encoder contract: source tokens in, one vector per position plus a summary out.

An encoder plugin subclasses :class:`Encoder` and is registered under ``attnlab.encoders``.

- **Construction**: ``__init__(vocab_size, embedding_dim, hidden_size, **options)``. Options are
  the keyword parameters after these three, each with a default; pass ``**options`` on to
  ``super().__init__``, which rejects unknown names listing yours. Values come from
  ``encoder_options`` or ``-o encoder.NAME=VALUE``, YAML-typed (``2`` an int, ``0.1`` a float,
  ``true`` a bool); validate them and raise ValueError (``require_positive_int``,
  ``require_probability`` from ``attnlab.plugins``).
- **Token ids**: ``PAD_ID`` (0) pads every source after its last token, where ``src_mask`` is
  False; give embeddings ``padding_idx=PAD_ID``. Ids from 4 on are characters (``UNK_ID`` = 3 is
  an unknown one).
- **output_dim**: set ``self.output_dim`` (D, ``hidden_size`` by default) to the size of what
  :meth:`Encoder.forward` returns; the decoder and its scorer are built for it.
- **forward(src long [B, Ls], src_mask bool [B, Ls])** returns ``EncoderOutput(outputs
  [B, Ls, D], summary [B, D])``. Outputs at a real position must not depend on the padding after
  it (a source alone gives the same outputs as in a padded batch), and outputs at padded
  positions must be finite (they get attention weight 0, and 0 x NaN is NaN). ``summary`` is the
  fixed-size vector a decoder without attention lives on.
- **Length limit**: an encoder that cannot take sources beyond some length exposes it as the
  attribute ``max_length``; the model reports it as ``max_source_length`` and refuses longer
  inputs before encoding.
- **Checks**: every model built probes its encoder once on three padded sources;
  ``attnlab plugins --check`` and ``attnlab.plugins.testing.check_encoder(MyEncoder)`` run the same checks.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from torch import Tensor, nn

from attnlab.plugins.options import Configurable, reject_unknown, require_positive_int


class EncoderOutput(NamedTuple):
    """outputs: [B, Ls, D] one vector per source position (keys and values of the attention).
    summary: [B, D] fixed-size vector of the whole source: all a decoder without attention has.
    """

    outputs: Tensor
    summary: Tensor


class Encoder(Configurable, nn.Module):
    """Base class of every encoder plugin.

    Args:
        vocab_size: number of source token ids (PAD is id 0).
        embedding_dim: size of the token embeddings.
        hidden_size: size of the hidden state.
        **options: encoder-specific options; unknown ones are an error.

    Subclasses set ``self.output_dim`` (D) and implement :meth:`forward`.
    """

    _fixed = ("vocab_size", "embedding_dim", "hidden_size")

    def __init__(self, vocab_size: int, embedding_dim: int, hidden_size: int, **options: Any) -> None:
        super().__init__()
        reject_unknown(type(self), options, self._fixed)
        require_positive_int(vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_size=hidden_size)
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hidden_size = hidden_size
        self.output_dim = hidden_size

    def forward(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        """src: long [B, Ls]; src_mask: bool [B, Ls], True on real tokens (False on padding).

        Outputs at padded positions are ignored downstream; the output at a real position must
        not depend on how much padding follows it.
        """
        raise NotImplementedError
