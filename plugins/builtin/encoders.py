"""Built-in encoders: gru, lstm, bigru (bidirectional GRU) and transformer.

Every encoder maps src long [B, Ls] and src_mask bool [B, Ls] to outputs [B, Ls, hidden_size] and
a summary [B, hidden_size]. The recurrent ones pack the padded batch, so a source's outputs do
not depend on the padding after it; their ``dropout`` acts on the embeddings and between layers.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnlab.plugins._recurrence import gru_scan, gru_states
from attnlab.plugins.builtin.transformer_input import TransformerInput, check_transformer_options
from attnlab.plugins.encoder import Encoder, EncoderOutput
from attnlab.plugins.options import require_positive_int, require_probability
from attnlab.plugins.tokens import PAD_ID

__all__ = [
    "BiGRUEncoder",
    "GRUEncoder",
    "LSTMEncoder",
    "TransformerEncoder",
]


class _RecurrentEncoder(Encoder):
    """Shared body of the RNN encoders: embed (dropout), run a packed RNN (dropout between its
    layers), summarise the final state."""

    rnn_class: type[nn.GRU] | type[nn.LSTM] = nn.GRU
    bidirectional = False

    def __init__(
        self, vocab_size: int, embedding_dim: int, hidden_size: int, layers: int = 1, dropout: float = 0.0, **options: Any
    ) -> None:
        super().__init__(vocab_size, embedding_dim, hidden_size, **options)
        require_positive_int(layers=layers)
        require_probability(dropout=dropout)
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD_ID)
        self.dropout = nn.Dropout(dropout)
        self.rnn = self.rnn_class(
            embedding_dim,
            hidden_size,
            num_layers=layers,
            batch_first=True,
            bidirectional=self.bidirectional,
            dropout=dropout if layers > 1 else 0.0,  # nn.GRU/nn.LSTM warn about it on one layer
        )
        directions = 2 if self.bidirectional else 1
        # Both directions are merged back to hidden_size so every scorer fits every encoder.
        self.merge = nn.Linear(directions * hidden_size, hidden_size) if self.bidirectional else None

    def forward(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        no_padding = bool(src_mask.all())
        dropping = self.training and self.dropout.p > 0
        if no_padding and not dropping and self.rnn_class is nn.GRU and not self.bidirectional and self.rnn.num_layers == 1:
            return self._scan(src)
        embedded = self.dropout(self.embedding(src))
        if no_padding:  # packing would give the same, only slower
            outputs, final = self.rnn(embedded)
        else:
            lengths = src_mask.sum(dim=1).cpu()
            packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
            packed_out, final = self.rnn(packed)
            outputs, _ = pad_packed_sequence(packed_out, batch_first=True, total_length=src.shape[1])
        h_n = final[0] if isinstance(final, tuple) else final  # LSTM returns (h_n, c_n)
        if self.merge is not None:  # bidirectional
            summary = torch.cat([h_n[-2], h_n[-1]], dim=-1)  # last layer, both directions
            return EncoderOutput(self.merge(outputs), self.merge(summary))
        # Batch-first but laid out time-major; every decoder step reads it, so make it contiguous.
        return EncoderOutput(outputs.contiguous(), h_n[-1])

    def _scan(self, src: Tensor) -> EncoderOutput:
        """forward() for one unidirectional GRU layer over unpadded sources, in one autograd
        function; the input gates are looked up per token in a [V, 3H] table."""
        weight = self.rnn.get_parameter
        table = F.linear(self.embedding.weight, weight("weight_ih_l0"), weight("bias_ih_l0"))
        h0 = table.new_zeros(src.shape[0], self.rnn.hidden_size)
        scan = gru_scan if torch.is_grad_enabled() else gru_states
        states = scan(src.t(), table, h0, weight("weight_hh_l0"), weight("bias_hh_l0"))  # [Ls, B, H]
        return EncoderOutput(states.transpose(0, 1).contiguous(), states[-1])


class GRUEncoder(_RecurrentEncoder):
    """Unidirectional GRU (the seed tutorial's encoder). Options: layers, dropout (embeddings and between layers)."""


class LSTMEncoder(_RecurrentEncoder):
    """Unidirectional LSTM. Options: layers, dropout (embeddings and between layers)."""

    rnn_class = nn.LSTM


class BiGRUEncoder(_RecurrentEncoder):
    """Bidirectional GRU (Bahdanau et al.); both directions are merged to hidden_size. Options: layers, dropout."""

    bidirectional = True


class TransformerEncoder(TransformerInput, Encoder):
    """Self-attention encoder with sinusoidal positions, honouring the padding mask.

    Options:
        layers: number of encoder layers (default 2).
        heads: attention heads per layer (default 4); must divide hidden_size.
        feedforward_dim: inner size of the feed-forward blocks (default 2 * hidden_size).
        dropout: dropout inside the layers (default 0.1).
        max_length: longest source accepted (default 512).
    """

    def __init__(
        self, vocab_size: int, embedding_dim: int, hidden_size: int,
        layers: int = 2, heads: int = 4, feedforward_dim: int | None = None, dropout: float = 0.1, max_length: int = 512,
        **options: Any,
    ) -> None:  # fmt: skip
        super().__init__(vocab_size, embedding_dim, hidden_size, **options)
        feedforward_dim = check_transformer_options(hidden_size, layers, heads, feedforward_dim, dropout, max_length)
        self._init_input(vocab_size, embedding_dim, hidden_size, max_length)
        layer = nn.TransformerEncoderLayer(hidden_size, heads, feedforward_dim, dropout, batch_first=True, norm_first=True)
        self.layers = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(hidden_size), enable_nested_tensor=False)

    def forward(self, src: Tensor, src_mask: Tensor) -> EncoderOutput:
        x = self._embed(src, "source")
        outputs = self.layers(x, src_key_padding_mask=~src_mask)
        keep = src_mask.unsqueeze(-1).to(outputs.dtype)
        summary = (outputs * keep).sum(dim=1) / keep.sum(dim=1)  # mean over real positions
        return EncoderOutput(outputs * keep, summary)
