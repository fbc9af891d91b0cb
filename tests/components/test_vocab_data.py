"""Vocabularies, padding, and splits that share no value."""

from __future__ import annotations

import random

import pytest
import torch

from attnlab.data.splits import SplitsUnavailable, check_benchmark_room, draw_distinct, encode_examples, make_splits
from attnlab.data.vocab import EOS, PAD, SOS, UNK, Vocab, pad_batch
from attnlab.plugins import create_plugin


def test_vocab_round_trip_and_specials():
    vocab = Vocab.from_alphabet("0123456789年月日")
    assert len(vocab) == 4 + 13
    ids = vocab.encode("2023年", sos=True, eos=True)
    assert ids[0] == SOS and ids[-1] == EOS and PAD not in ids
    assert vocab.decode(ids + [PAD, PAD]) == "2023年"
    assert vocab.decode(vocab.encode("12") + [EOS] + vocab.encode("99")) == "12"  # stops at EOS
    assert vocab.encode("x") == [UNK]


def test_pad_batch_pads_and_masks():
    ids, mask = pad_batch([[5, 6, 7], [8]])
    assert ids.tolist() == [[5, 6, 7], [8, PAD, PAD]]
    assert mask.tolist() == [[True, True, True], [True, False, False]]


@pytest.mark.parametrize("task_name", ["date", "date-formats", "reverse"])
def test_splits_are_disjoint_by_value_and_deterministic(task_name):
    task = create_plugin("tasks", task_name)
    splits = make_splits(task, (600, 100, 200), seed=3)
    assert [len(s) for _, s in splits.items()] == [600, 100, 200]
    keys = [{task.key(ex) for ex in split} for _, split in splits.items()]
    assert not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])
    assert make_splits(task, (600, 100, 200), seed=3) == splits
    assert make_splits(task, (600, 100, 200), seed=4) != splits


def test_asking_for_more_values_than_the_task_has_is_an_error():
    task = create_plugin("tasks", "date", min_year=2020, max_year=2020)
    with pytest.raises(ValueError, match="400 examples, but task DateTask has only 366 distinct values"):
        make_splits(task, (300, 50, 50), seed=0)


def test_a_benchmark_larger_than_the_task_is_refused_before_training():
    """One year of dates (365 values) cannot hold the 500-example benchmark a registered model
    draws at its first promotion: refused in one line (it was a traceback after training)."""
    year = create_plugin("tasks", "date", min_year=2023, max_year=2023)
    with pytest.raises(SplitsUnavailable, match="benchmark takes 500 distinct examples, but task DateTask has only 365 distinct values"):
        check_benchmark_room(year, (50, 10, 10), 500)
    with pytest.raises(SplitsUnavailable, match="ask for a benchmark of at most 365"):
        check_benchmark_room(year, (50, 10, 10), 366)
    check_benchmark_room(year, (50, 10, 10), 305)  # 50 + 10 + 305 = 365: room for every split


def test_training_and_validation_leave_room_for_the_benchmark_they_avoid():
    """Training and validation never draw a benchmark source, so with the benchmark they must fit
    in the task's values; the test split may share them, and a longer test task is not checked."""
    year = create_plugin("tasks", "date", min_year=2023, max_year=2023)
    with pytest.raises(SplitsUnavailable, match=r"train \+ validation \+ benchmark = 56 \+ 10 \+ 300 examples.*at most 65 in train"):
        check_benchmark_room(year, (56, 10, 365), 300)
    check_benchmark_room(year, (55, 10, 365), 300)
    longer = create_plugin("tasks", "date", min_year=2000, max_year=2030)
    check_benchmark_room(year, (300, 65, 10), 500, test_task=longer)


def test_too_few_distinct_values_is_a_user_error_in_one_line():
    task = create_plugin("tasks", "reverse", min_length=2, max_length=2)
    with pytest.raises(SplitsUnavailable, match="asked for 101 distinct examples but task ReverseTask has only 100"):
        draw_distinct(task, 101, random.Random(0))


def test_encode_examples_frames_targets():
    task = create_plugin("tasks", "reverse", min_length=2, max_length=4)
    examples = task.generate(5, seed=1)
    src_vocab, tgt_vocab = Vocab.from_alphabet(task.source_alphabet), Vocab.from_alphabet(task.target_alphabet)
    data = encode_examples(examples, src_vocab, tgt_vocab)
    assert data.tgt[:, 0].eq(SOS).all()
    assert data.source_lengths.tolist() == [len(ex.source) for ex in examples]
    for row, ex in enumerate(examples):
        assert tgt_vocab.decode(data.tgt[row, 1:].tolist()) == ex.target
        assert torch.equal(data.src_mask[row].sum(), torch.tensor(len(ex.source)))


def test_test_split_can_come_from_longer_sources():
    task = create_plugin("tasks", "reverse", min_length=5, max_length=10)
    longer = create_plugin("tasks", "reverse", min_length=5, max_length=20)
    splits = make_splits(task, (300, 50, 400), seed=0, test_task=longer)
    assert max(len(ex.source) for ex in splits.train + splits.validation) <= 10
    assert max(len(ex.source) for ex in splits.test) > 10
    seen = {ex.target for ex in splits.train + splits.validation}
    assert not seen & {ex.target for ex in splits.test}
