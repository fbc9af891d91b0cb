"""What bounds a run's memory: beam search decodes as many hypotheses at a time as a greedy batch
holds rows, the validation loss is computed in batches to the same float, the freed heap goes back to the kernel at the end of training and evaluation, and
the cmudict task keeps its examples, not the dictionary's parsed entries."""

from __future__ import annotations

import random
from collections.abc import Iterator

import psutil
import torch

from attnlab.data.splits import encode_examples
from attnlab.evaluation import metrics
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.cpu_settings import release_freed_memory, retain_freed_memory
from attnlab.plugins.builtin.cmudict_task import CmudictTask, entries
from attnlab.training import loop
from attnlab.training.experiment import run_experiment
from attnlab.training.optimization import held_out_loss, sequence_loss


def test_beam_search_decodes_batch_size_hypotheses_at_a_time(monkeypatch):
    torch.manual_seed(0)
    config = ExperimentConfig(task="reverse", hidden_size=8, embedding_dim=4, scorer="additive")
    task = build_task(config)
    model = build_model(config, task)
    examples = [task.sample(random.Random(seed)) for seed in range(23)]
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab)
    whole = metrics.decode_texts(model, data, batch_size=10_000, beam_size=5)
    rows: list[int] = []
    beam_search = metrics.beam_search

    def counted(model, src, *args):
        rows.append(src.shape[0])
        return beam_search(model, src, *args)

    monkeypatch.setattr(metrics, "beam_search", counted)
    assert metrics.decode_texts(model, data, batch_size=10, beam_size=5) == whole
    assert rows == [2] * 11 + [1]  # 10 hypotheses a batch: 2 sources of 5 beams each
    rows.clear()
    metrics.decode_texts(model, data, batch_size=3, beam_size=5)
    assert rows == [1] * 23  # never fewer than one source


def test_training_and_evaluation_each_hand_freed_memory_back(monkeypatch):
    config = ExperimentConfig(task="reverse", hidden_size=8, embedding_dim=4, epochs=1, train_size=64, validation_size=8, test_size=8)
    released: list[str] = []
    monkeypatch.setattr(loop, "release_freed_memory", lambda: released.append("training"))
    monkeypatch.setattr(metrics, "release_freed_memory", lambda: released.append("evaluation"))
    run_experiment(config)
    assert released == ["training", "evaluation"]


def test_release_freed_memory_returns_the_freed_heap_to_the_kernel():
    retain_freed_memory()  # as training sets it: blocks under 32 MB come from the heap, 128 MB kept free
    process = psutil.Process()
    blocks = [torch.ones(256 * 1024) for _ in range(200)]  # 1 MB each, 200 MB of heap
    pinned = blocks[-1]  # the block at the top keeps the freed ones below it from being trimmed
    del blocks
    before = process.memory_info().rss
    assert release_freed_memory()
    assert before - process.memory_info().rss > 150 * 2**20
    assert float(pinned[0]) == 1.0


def test_the_cmudict_task_keeps_no_parsed_entries():
    assert isinstance(entries(), Iterator)  # read afresh each time, not held for the run
    task = CmudictTask(max_length=6)
    assert task.max_source_length == 6 == max(len(example.source) for example in task.corpus())
    assert CmudictTask().max_source_length == max(len(example.source) for example in CmudictTask().corpus())


def test_the_held_out_loss_in_batches_is_the_whole_splits_loss_to_the_bit():
    torch.manual_seed(0)
    config = ExperimentConfig(task="reverse", hidden_size=8, embedding_dim=4, scorer="additive")
    task = build_task(config)
    model = build_model(config, task).eval()
    examples = [task.sample(random.Random(seed)) for seed in range(50)]  # a sum whose last bit depends on the order
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab)
    with torch.no_grad():
        whole = sequence_loss(model, data, 1.0)
    for rows in (1, 7, 50, 100):
        assert held_out_loss(model, data, rows).item() == whole.item()
