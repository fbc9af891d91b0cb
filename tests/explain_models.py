"""Hand-made models whose explanations are known, shared by the attribution and explanation tests
(importable from tests/ as ``explain_models``: pytest puts the folder of tests/conftest.py on the
path)."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.data.vocab import EOS, Vocab
from attnlab.model.assembly import Seq2Seq
from attnlab.plugins import AttentionOutput, Decoder, EncoderOutput, Example

VOCAB = Vocab.from_alphabet("abcd")
DIM = 4


class EmbeddingEncoder(nn.Module):
    """outputs: the source tokens' embeddings [B, Ls, DIM] (PAD's is zero); summary: their sum."""

    def __init__(self) -> None:
        super().__init__()
        self.embedding = nn.Embedding(len(VOCAB), DIM, padding_idx=0)

    def forward(self, src, src_mask):
        outputs = self.embedding(src)
        return EncoderOutput(outputs, outputs.sum(1))


class OnePositionDecoder(Decoder):
    """Every output token but EOS depends on source position ``position`` alone: logits =
    W tanh(embedding there), characters only; EOS after ``length`` tokens. The attention it
    reports, and never uses, is all on position ``shown`` (None when ``attends`` is False)."""

    def __init__(self, position: int, shown: int, length: int = 3, attends: bool = True) -> None:
        super().__init__(len(VOCAB), DIM, DIM, DIM, lambda query_dim, key_dim: None)
        self.position, self.shown, self.length, self.attends = position, shown, length, attends
        self.out = nn.Linear(DIM, len(VOCAB))

    def start(self, memory, src_mask):
        return (torch.zeros(src_mask.shape[0], dtype=torch.long, device=src_mask.device),)

    def step(self, tokens, state, memory, src_mask):
        t = state[0]
        characters = self.out(torch.tanh(memory.outputs[:, self.position]))
        characters = characters.masked_fill(torch.arange(len(VOCAB)) < 4, -30.0)  # no special token
        ending = torch.full_like(characters, -30.0).index_fill(1, torch.tensor([EOS]), 30.0)
        logits = torch.where((t >= self.length).unsqueeze(1), ending, characters)
        weights = torch.zeros(src_mask.shape[0], 1, src_mask.shape[1])
        weights[:, 0, self.shown] = 1.0
        return logits, (t + 1,), AttentionOutput(weights @ memory.outputs, weights if self.attends else None)


def one_position_model(position: int, shown: int, attends: bool = True, seed: int = 0) -> Seq2Seq:
    """A model whose outputs depend on source ``position`` alone and whose attention is on
    ``shown`` (see :class:`OnePositionDecoder`)."""
    torch.manual_seed(seed)
    return Seq2Seq(EmbeddingEncoder(), OnePositionDecoder(position, shown, attends=attends), VOCAB, VOCAB)


def answered(model: Seq2Seq, source: str, position: int) -> Example:
    """``source`` with the model's own output as its target, every target token aligned to
    ``position``."""
    from attnlab.data.vocab import pad_batch
    from attnlab.model.decode import greedy_decode

    src, mask = pad_batch([VOCAB.encode(source)])
    output = VOCAB.decode(greedy_decode(model, src, mask, 8).tokens[0].tolist())
    return Example(source, output, tuple((position,) for _ in output))
