"""Models whose explanations are known, for the attribution and explanation-measure tests."""

from __future__ import annotations

import torch
from torch import nn

from attnlab.data.vocab import PAD
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import Seq2Seq, build_model, build_task
from attnlab.model.decode import greedy_decode
from attnlab.plugins import Attention, Encoder, EncoderOutput, dot_scores

TINY = dict(task="reverse", task_options={"min_length": 3, "max_length": 6}, hidden_size=8, embedding_dim=4,
            train_size=16, validation_size=4, test_size=8, device="cpu")  # fmt: skip
#: The one source position the hand-made encoder passes on (padding in the sources of 3 and 4).
KEPT = 4


class OnePositionEncoder(Encoder):
    """Outputs [B, Ls, H] that are 0 except at position :data:`KEPT`, and the summary of that
    position alone: whatever the decoder and its scorer do, only that source token can matter."""

    def __init__(self, vocab_size: int, embedding_dim: int, hidden_size: int, **options) -> None:
        super().__init__(vocab_size, embedding_dim, hidden_size, **options)
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD)
        self.project = nn.Linear(embedding_dim, hidden_size)

    def forward(self, src, src_mask):
        projected = torch.tanh(self.project(self.embedding(src)))  # [B, Ls, H]
        kept = torch.zeros(src.shape[1], 1)
        kept[KEPT] = 1.0
        return EncoderOutput(projected * kept, projected[:, KEPT])


class CosineAttention(Attention):
    """A third party's scorer: cosine similarity of the query and each key, through a projection."""

    def __init__(self, query_dim: int, key_dim: int, **options) -> None:
        super().__init__(query_dim, key_dim, **options)
        self.query = nn.Linear(query_dim, key_dim, bias=False)

    def score(self, query, keys):  # [B, Lq, Dq], [B, Lk, Dk] -> [B, Lq, Lk]
        return dot_scores(nn.functional.normalize(self.query(query), dim=-1), nn.functional.normalize(keys, dim=-1))


def built_model(**overrides) -> tuple[Seq2Seq, torch.Tensor, torch.Tensor]:
    config = ExperimentConfig(**{**TINY, **overrides})
    task = build_task(config)
    model = build_model(config, task)
    sources = [model.src_vocab.encode(example.source) for example in task.generate(6, seed=1)]
    longest = max(map(len, sources))
    src = torch.tensor([ids + [PAD] * (longest - len(ids)) for ids in sources])
    return model, src, src != PAD


def greedy_outputs(model: Seq2Seq, src: torch.Tensor, mask: torch.Tensor, steps: int = 8) -> torch.Tensor:
    """long [B, steps]: the greedy outputs, PAD after EOS (also once every row has ended)."""
    with torch.no_grad():
        tokens = greedy_decode(model, src, mask, max_length=steps).tokens
    return nn.functional.pad(tokens, (0, steps - tokens.shape[1]), value=PAD)
