"""The decoder contract: step-wise generation over the encoder's memory, through a scorer.

A decoder plugin subclasses :class:`Decoder` and is registered under ``attnlab.decoders``.

- **Construction**: ``__init__(vocab_size, embedding_dim, hidden_size, memory_dim,
  make_attention, **options)``. ``memory_dim`` is the encoder's ``output_dim``;
  ``make_attention(query_dim, key_dim)`` builds the configured scorer for the sizes you choose
  (call it once per attention layer). Options are the keyword parameters after these, each with
  a default, passed on as ``**options`` to ``super().__init__``; values arrive YAML-typed from
  ``decoder_options`` or ``-o decoder.NAME=VALUE``.
- **Token ids**: targets are framed as ``SOS_ID`` (1), the characters, ``EOS_ID`` (2), then
  ``PAD_ID`` (0) to the batch's length; give embeddings ``padding_idx=PAD_ID``.
- **start(memory, src_mask) -> state**: a tuple of tensors whose first axis is the batch (beam
  search reorders and repeats states along it).
- **step(tokens long [B], state, memory, src_mask) -> (logits [B, V], state, AttentionOutput)**:
  one step; logits are unnormalised, the attention's weights [B, 1, Ls] or None (the ``none``
  scorer).
- **Incremental decoding** (optional): greedy decoding, beam search, ``attnlab predict`` and the
  served model all decode through ``start`` and ``step``, one token at a time. A decoder whose
  next output depends on the whole prefix (self-attention) may keep the prefix itself as its
  state, long [B, t], and run all t + 1 positions again at every step: that works, at a cost
  growing with t. It may instead keep what its layers computed for the earlier positions, e.g.
  each layer's self-attention keys and values [B, 2, heads, t, head_dim] (fairseq's
  ``incremental_state``, Hugging Face's ``past_key_values``), and run the new position alone, as
  the built-in ``transformer`` does. Either way the state is the tuple of batch-first tensors
  above, nothing more: after every step beam search keeps the best hypotheses by
  ``state[i].index_select(0, parents)`` (the surviving hypotheses' indices), and the erasure
  tests repeat it, so a cache held there follows its hypotheses with no hook to write. Every
  model built checks that ``forward``'s logits equal the steps', which a cache that drops or
  misplaces a position fails.
- **forward(tgt_in [B, Lt], memory, src_mask, need_weights=True) -> DecoderOutput(logits [B, Lt,
  V], weights [B, Lt, Ls] or None, head_weights, layer_weights)**: teacher forcing, ``tgt_in`` =
  SOS then the target without EOS. The default runs :meth:`Decoder.step`; an override must give
  the same logits as the steps, with or without weights. A decoder with several attention
  layers may report each layer's weights as ``layer_weights`` [B, layers, Lt, Ls] (optional,
  default None; the attention explorer shows one view per layer); ``weights`` stays the weights
  the decoder reports as its own (the built-in transformer: those of its last layer).
- **Checks**: every model built probes its decoder over the encoder's probe output;
  ``attnlab plugins --check`` and ``attnlab.plugins.testing.check_decoder(MyDecoder)`` run the same checks
  (with the ``general`` scorer and with ``none``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor, nn

from attnlab.plugins.attention import Attention, AttentionOutput
from attnlab.plugins.encoder import EncoderOutput
from attnlab.plugins.options import Configurable, reject_unknown, require_positive_int

#: Builds a scorer for the given (query_dim, key_dim); the decoder decides both.
AttentionFactory = Callable[[int, int], Attention]

#: Decoding state: a tuple of tensors whose first axis is the batch (so beam search can reorder).
State = tuple[Tensor, ...]


class DecoderOutput(NamedTuple):
    """logits: [B, Lt, V]; weights: [B, Lt, Ls] or None; head_weights: [B, H, Lt, Ls] or None;
    layer_weights: [B, layers, Lt, Ls], each attention layer's weights, or None (a decoder with
    one attention layer, or one that does not report them)."""

    logits: Tensor
    weights: Tensor | None
    head_weights: Tensor | None = None
    layer_weights: Tensor | None = None


class Decoder(Configurable, nn.Module):
    """Base class of every decoder plugin.

    Args:
        vocab_size: number of target token ids (PAD 0, SOS 1, EOS 2).
        embedding_dim: size of the target token embeddings.
        hidden_size: size of the decoder state.
        memory_dim: size D of the encoder outputs (keys and values).
        make_attention: builds the scorer, ``make_attention(query_dim, key_dim)``.
        **options: decoder-specific options; unknown ones are an error.

    A subclass implements :meth:`start` and :meth:`step`; the default :meth:`forward` runs the
    steps with teacher forcing. Subclasses may override :meth:`forward` with a faster path that
    gives the same logits.
    """

    _fixed = ("vocab_size", "embedding_dim", "hidden_size", "memory_dim", "make_attention")

    def __init__(
        self, vocab_size: int, embedding_dim: int, hidden_size: int, memory_dim: int, make_attention: AttentionFactory,
        **options: Any,
    ) -> None:  # fmt: skip
        super().__init__()
        reject_unknown(type(self), options, self._fixed)
        require_positive_int(vocab_size=vocab_size, embedding_dim=embedding_dim, hidden_size=hidden_size, memory_dim=memory_dim)
        self.vocab_size = vocab_size
        self.embedding_dim = embedding_dim
        self.hidden_size = hidden_size
        self.memory_dim = memory_dim

    def start(self, memory: EncoderOutput, src_mask: Tensor) -> State:
        """The state before the first step (batch-first tensors)."""
        raise NotImplementedError

    def step(self, tokens: Tensor, state: State, memory: EncoderOutput, src_mask: Tensor) -> tuple[Tensor, State, AttentionOutput]:
        """One step. tokens: long [B] (the previous output, SOS first).

        Returns logits [B, V], the new state, and the step's attention (Lq = 1).
        """
        raise NotImplementedError

    def forward(
        self,
        tgt_in: Tensor,
        memory: EncoderOutput,
        src_mask: Tensor,
        need_weights: bool = True,
    ) -> DecoderOutput:
        """Teacher-forced decoding. tgt_in: long [B, Lt] (SOS then the target without EOS)."""
        state = self.start(memory, src_mask)
        logits: list[Tensor] = []
        weights: list[Tensor | None] = []
        heads: list[Tensor | None] = []
        for t in range(tgt_in.shape[1]):
            step_logits, state, attn = self.step(tgt_in[:, t], state, memory, src_mask)
            logits.append(step_logits)
            weights.append(attn.weights)
            heads.append(attn.head_weights)
        return DecoderOutput(
            torch.stack(logits, dim=1),
            cat_steps(weights, dim=1) if need_weights else None,
            cat_steps(heads, dim=2) if need_weights else None,
        )


def cat_steps(parts: list[Tensor | None], dim: int) -> Tensor | None:
    """Concatenate per-step attention weights along ``dim``; None when the steps have none."""
    if not parts or parts[0] is None:
        return None
    steps = [part for part in parts if part is not None]
    if len(steps) != len(parts):
        raise ValueError("some decoding steps have attention weights and others have none")
    return torch.cat(steps, dim=dim)
