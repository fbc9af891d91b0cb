"""Built-in decoders: rnn (GRU or LSTM cell, the seed's design) and transformer.

Shapes: tgt_in long [B, Lt]; memory.outputs [B, Ls, D]; memory.summary [B, D];
src_mask bool [B, Ls]; logits [B, Lt, V]; weights [B, Lt, Ls].
"""

from __future__ import annotations

from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlab.plugins._attentive_recurrence import attentive_gru_scan, attentive_step
from attnlab.plugins._recurrence import gru_cell
from attnlab.plugins.attention import AttentionOutput
from attnlab.plugins.builtin.transformer_decoder_layer import TransformerDecoderLayer
from attnlab.plugins.builtin.transformer_input import TransformerInput, check_transformer_options
from attnlab.plugins.decoder import AttentionFactory, Decoder, DecoderOutput, State, cat_steps
from attnlab.plugins.encoder import EncoderOutput
from attnlab.plugins.options import require_probability
from attnlab.plugins.tokens import PAD_ID

CELLS: dict[str, type[nn.GRUCell] | type[nn.LSTMCell]] = {"gru": nn.GRUCell, "lstm": nn.LSTMCell}


class RNNDecoder(Decoder):
    """Recurrent decoder with attention, as in the seed tutorial and Bahdanau et al.

    At each step the query is the previous decoder state, keys = values = encoder outputs; the
    context is concatenated with the input embedding and fed to the cell; the next token is
    predicted from the new state and the context. The first state is built from the encoder
    summary, which is all the decoder has under the ``none`` scorer.

    Options:
        cell: "gru" (default) or "lstm".
        dropout: dropout on the embeddings and before the output layer (default 0).
    """

    def __init__(
        self, vocab_size: int, embedding_dim: int, hidden_size: int, memory_dim: int, make_attention: AttentionFactory,
        cell: str = "gru", dropout: float = 0.0, **options: Any,
    ) -> None:  # fmt: skip
        super().__init__(vocab_size, embedding_dim, hidden_size, memory_dim, make_attention, **options)
        if cell not in CELLS:
            raise ValueError(f"unknown cell {cell!r}; allowed: {', '.join(CELLS)}")
        require_probability(dropout=dropout)
        self.is_lstm = cell == "lstm"
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD_ID)
        self.attention = make_attention(hidden_size, memory_dim)
        context_dim = self.attention.output_dim
        self.bridge = nn.Linear(memory_dim, hidden_size)
        self.cell = CELLS[cell](embedding_dim + context_dim, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(hidden_size + context_dim, vocab_size)

    def start(self, memory: EncoderOutput, src_mask: Tensor) -> State:
        h = torch.tanh(self.bridge(memory.summary))
        return (h, torch.zeros_like(h)) if self.is_lstm else (h,)

    def _attend(self, state: State, memory: EncoderOutput, src_mask: Tensor, need_weights: bool) -> AttentionOutput:
        """Attention for the next step: query = previous state [B, 1, H]; Lq = 1."""
        query, keys = state[0].unsqueeze(1), memory.outputs
        if need_weights:
            attn: AttentionOutput = self.attention(query, keys, keys, src_mask)
            return attn
        return AttentionOutput(self.attention.context_only(query, keys, keys, src_mask), None)

    def _context_weight(self) -> Tensor:
        """The context's columns of the cell's input weight, [G, C], contiguous (a strided slice
        makes every step's matmul several times slower)."""
        return self.cell.weight_ih[:, self.embedding_dim :].contiguous()

    def _cell(self, input_gates: Tensor, context: Tensor, state: State, w_context: Tensor) -> State:
        """One recurrent step. input_gates [B, G] = W_ih[:, :E] x + b_ih for the embedded token,
        context [B, C]; the cell's input is [embedding; context], split so the embedding part can
        be computed for all steps at once. Same arithmetic as nn.GRUCell / nn.LSTMCell."""
        gates_in = input_gates + F.linear(context, w_context)
        gates_h = F.linear(state[0], self.cell.weight_hh, self.cell.bias_hh)
        if self.is_lstm:
            i, f, g, o = (gates_in + gates_h).chunk(4, dim=1)
            c = torch.sigmoid(f) * state[1] + torch.sigmoid(i) * torch.tanh(g)
            return (torch.sigmoid(o) * torch.tanh(c), c)
        return (gru_cell(gates_in, gates_h, state[0])[0],)

    def _gate_table(self) -> Tensor:
        """The embedding's share of the cell's input gates for every token, [V, G]."""
        return F.linear(self.embedding.weight, self.cell.weight_ih[:, : self.embedding_dim], self.cell.bias_ih)

    def _input_gates(self, tokens: Tensor) -> Tensor:
        """tokens long [B, ...] -> the embedding's share of the cell's input gates [B, ..., G]."""
        if (self.training and self.dropout.p > 0) or tokens.numel() < self.vocab_size:
            weight, bias = self.cell.weight_ih[:, : self.embedding_dim], self.cell.bias_ih
            return F.linear(self.dropout(self.embedding(tokens)), weight, bias)
        # Without dropout the share depends on the token alone: project the whole vocabulary once
        # and look the rows up, instead of a [tokens, E] x [E, G] matmul.
        return F.embedding(tokens, self._gate_table())

    def _fused_scale(self) -> float | None:
        """The dot-product scale when the GRU steps can run fused (see plugins.recurrence)."""
        if self.is_lstm or (self.training and self.dropout.p > 0):
            return None
        return self.attention.dot_scale()

    def step(self, tokens: Tensor, state: State, memory: EncoderOutput, src_mask: Tensor) -> tuple[Tensor, State, AttentionOutput]:
        scale = self._fused_scale()
        if scale is not None and not torch.is_grad_enabled():
            h, context, weights = attentive_step(
                tokens, self._gate_table(), state[0], memory.outputs, None if bool(src_mask.all()) else src_mask,
                self._context_weight(), self.cell.weight_hh, self.cell.bias_hh, scale,
            )  # fmt: skip
            logits = self.out(torch.cat([h, context], dim=-1))
            return logits, (h,), AttentionOutput(context.unsqueeze(1), weights.unsqueeze(1))
        attn = self._attend(state, memory, src_mask, need_weights=True)
        context = attn.context[:, 0]
        state = self._cell(self._input_gates(tokens), context, state, self._context_weight())
        logits = self.out(self.dropout(torch.cat([state[0], context], dim=-1)))
        return logits, state, attn

    def forward(self, tgt_in: Tensor, memory: EncoderOutput, src_mask: Tensor, need_weights: bool = True) -> DecoderOutput:
        scale = self._fused_scale()
        if scale is not None:
            return self._fused_forward(tgt_in, memory, src_mask, scale, need_weights)
        # step() for all positions, with the embedding and output layers run once for all steps.
        input_gates = self._input_gates(tgt_in)  # [B, Lt, G]
        w_context = self._context_weight()
        state = self.start(memory, src_mask)
        hiddens: list[Tensor] = []
        contexts: list[Tensor] = []
        weights: list[Tensor | None] = []
        heads: list[Tensor | None] = []
        # unbind, not [:, t]: its backward stacks once instead of zero-filling [B, Lt, G] per step.
        for step_gates in input_gates.unbind(1):
            attn = self._attend(state, memory, src_mask, need_weights)
            state = self._cell(step_gates, attn.context[:, 0], state, w_context)
            hiddens.append(state[0])
            contexts.append(attn.context)
            weights.append(attn.weights)
            heads.append(attn.head_weights)
        features = torch.cat([torch.stack(hiddens, dim=1), torch.cat(contexts, dim=1)], dim=-1)
        logits = self.out(self.dropout(features))
        if not need_weights:
            return DecoderOutput(logits, None)
        return DecoderOutput(logits, cat_steps(weights, dim=1), cat_steps(heads, dim=2))

    def _fused_forward(self, tgt_in: Tensor, memory: EncoderOutput, src_mask: Tensor, scale: float, need_weights: bool) -> DecoderOutput:
        """forward() for a GRU cell and a dot-product scorer: all steps in one autograd function."""
        mask = None if bool(src_mask.all()) else src_mask
        features, weights = attentive_gru_scan(
            tgt_in.t(),
            self._gate_table(),
            self.start(memory, src_mask)[0],
            memory.outputs,
            mask,
            self._context_weight(),
            self.cell.weight_hh,
            self.cell.bias_hh,
            scale,
        )
        logits = self.out(features).transpose(0, 1)  # features [Lt, B, H + C]
        return DecoderOutput(logits, weights.transpose(0, 1) if need_weights else None)


class TransformerDecoder(TransformerInput, Decoder):
    """Transformer decoder: masked self-attention plus cross-attention through the chosen scorer.

    The encoder summary is added to every input position, so the ``none`` scorer still has the
    source's fixed-size summary. Reported weights (and a multi-head scorer's head weights) are
    those of the last layer; ``layer_weights`` [B, layers, Lt, Ls] has every layer's.

    Options:
        layers: number of layers (default 2).
        heads: self-attention heads (default 4); must divide hidden_size.
        feedforward_dim: inner size of the feed-forward blocks (default 2 * hidden_size).
        dropout: dropout inside the layers (default 0.1).
        max_length: longest target (default 512).

    Decoding is incremental: the state holds each layer's self-attention keys and values of the
    positions decoded so far, so a step runs the new position alone. The attribute ``use_cache``
    (default True; not an option, not saved) set to False makes every step run the whole prefix
    again instead, the decoding before the cache: the reference the cached steps are checked
    against (``tests/plugins/test_incremental_decoding.py``, ``benchmarks/bench_decoding.py``).
    Set it before :meth:`start`: the two states differ.
    """

    use_cache: bool = True

    def __init__(
        self, vocab_size: int, embedding_dim: int, hidden_size: int, memory_dim: int, make_attention: AttentionFactory,
        layers: int = 2, heads: int = 4, feedforward_dim: int | None = None, dropout: float = 0.1, max_length: int = 512,
        **options: Any,
    ) -> None:  # fmt: skip
        super().__init__(vocab_size, embedding_dim, hidden_size, memory_dim, make_attention, **options)
        feedforward_dim = check_transformer_options(hidden_size, layers, heads, feedforward_dim, dropout, max_length)
        self._init_input(vocab_size, embedding_dim, hidden_size, max_length)
        self.summary_proj = nn.Linear(memory_dim, hidden_size)
        self.layers = nn.ModuleList(
            TransformerDecoderLayer(hidden_size, heads, feedforward_dim, dropout, make_attention(hidden_size, memory_dim))
            for _ in range(layers)
        )
        self.norm = nn.LayerNorm(hidden_size)
        self.out = nn.Linear(hidden_size, vocab_size)

    def _run(self, tgt_in: Tensor, memory: EncoderOutput, src_mask: Tensor, need_weights: bool) -> tuple[Tensor, list[AttentionOutput]]:
        """tgt_in [B, Lt] -> logits [B, Lt, V] and every layer's cross-attention, first to last."""
        length = tgt_in.shape[1]
        x = self._embed(tgt_in, "target")
        x = x + self.summary_proj(memory.summary).unsqueeze(1)
        causal = torch.ones(length, length, dtype=torch.bool, device=tgt_in.device).triu(1)
        attns: list[AttentionOutput] = []
        for layer in self.layers:
            x, attn = layer(x, causal, memory.outputs, src_mask, need_weights)
            attns.append(attn)
        return self.out(self.norm(x)), attns

    def forward(self, tgt_in: Tensor, memory: EncoderOutput, src_mask: Tensor, need_weights: bool = True) -> DecoderOutput:
        logits, attns = self._run(tgt_in, memory, src_mask, need_weights)
        last = attns[-1]
        weights = [attn.weights for attn in attns if attn.weights is not None]
        layers = torch.stack(weights, dim=1) if last.weights is not None else None
        return DecoderOutput(logits, last.weights, last.head_weights, layers)

    def _layers(self) -> list[TransformerDecoderLayer]:
        return cast("list[TransformerDecoderLayer]", list(self.layers))

    def start(self, memory: EncoderOutput, src_mask: Tensor) -> State:
        """Every layer's empty cache [B, 2, H, 0, Dh], first to last; with ``use_cache`` False the
        empty prefix, long [B, 0]."""
        batch = memory.summary.shape[0]
        if not self.use_cache:
            return (memory.summary.new_zeros(batch, 0, dtype=torch.long),)
        return tuple(layer.empty_cache(batch, memory.summary) for layer in self._layers())

    def step(self, tokens: Tensor, state: State, memory: EncoderOutput, src_mask: Tensor) -> tuple[Tensor, State, AttentionOutput]:
        """The next position over every layer's cache [B, 2, H, t, Dh]: its keys and values
        are computed once, at the step that adds them (see :meth:`TransformerDecoderLayer.step`)."""
        if not self.use_cache:
            return self._reread_step(tokens, state, memory, src_mask)
        x = self._embed(tokens.unsqueeze(1), "target", start=state[0].shape[3])  # [B, 1, size]
        x = x + self.summary_proj(memory.summary).unsqueeze(1)
        caches: list[Tensor] = []
        for layer, cache in zip(self._layers(), state):
            x, cache, attn = layer.step(x, cache, memory.outputs, src_mask)
            caches.append(cache)
        return self.out(self.norm(x[:, 0])), tuple(caches), attn

    def _reread_step(self, tokens: Tensor, state: State, memory: EncoderOutput, src_mask: Tensor) -> tuple[Tensor, State, AttentionOutput]:
        """The step without a cache: the state is the prefix long [B, t]; all t + 1 positions run again."""
        prefix = torch.cat([state[0], tokens.unsqueeze(1)], dim=1)  # [B, t + 1]
        logits, attns = self._run(prefix, memory, src_mask, need_weights=True)
        attn = attns[-1]
        last = AttentionOutput(
            attn.context[:, -1:],
            None if attn.weights is None else attn.weights[:, -1:],
            None if attn.head_weights is None else attn.head_weights[:, :, -1:],
        )
        return logits[:, -1], (prefix,), last
