"""attnlab.model.predict with beam_size: beam search decodes (its outputs are beam_search's), greedy
stays the default, and the sources are checked one by one (source_issue)."""

from __future__ import annotations

import pytest
import torch

from attnlab.data.vocab import pad_batch
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.decode import beam_search, default_max_length
from attnlab.model.predict import predict, source_issue

SOURCES = ["25-12-2023", "01-02-2003", "31-07-2019", "29-02-2024"]


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(42)
    config = ExperimentConfig(hidden_size=7, embedding_dim=7)
    task = build_task(config)
    return task, build_model(config, task)


def beam_outputs(model, texts, beam_size):
    src, mask = pad_batch([model.src_vocab.encode(text) for text in texts])
    tokens = beam_search(model, src, mask, default_max_length(src.shape[1]), beam_size)
    return [model.tgt_vocab.decode(row) for row in tokens.tolist()]


def test_beam_size_decodes_by_beam_search(tiny):
    task, model = tiny
    results = predict(model, task, SOURCES, beam_size=4)
    assert [r.output for r in results] == beam_outputs(model, SOURCES, 4)
    assert all(r.weights is None for r in results)  # beam search keeps no attention
    greedy = predict(model, task, SOURCES)
    assert [r.output for r in greedy] == beam_outputs(model, SOURCES, 1)
    assert [r.output for r in greedy] != [r.output for r in results]  # this seed's model: beam finds other outputs


def test_source_issue_names_what_check_sources_refuses(tiny):
    task, model = tiny
    assert source_issue("25-12-2023", task, model, longest=10) is None
    assert source_issue("99-99-2023", task, model, longest=10).startswith("'99-99-2023' is not a real date")
    assert source_issue("1" * 11, task, model, longest=10) == "'11111111111' has 11 characters; this model's task has sources of at most 10"
