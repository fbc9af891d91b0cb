"""Token tasks: a side cut into whitespace-separated tokens (phonemes, words) goes through the
task contract, the test kit, vocabularies, training, evaluation, prediction and the bundle as
tokens; a character task is unchanged."""

from __future__ import annotations

import json

import pytest

from attnlab.data.vocab import Vocab
from attnlab.plugins import PluginContractError
from attnlab.plugins.testing import check_task

#: A third party's token tasks, installed as a distribution with entry points.
TOKEN_TASKS = '''
import random

from attnlab.plugins import Example, Task

NAMES = {"a": "ALPHA", "b": "BRAVO", "c": "CHARLIE", "d": "DELTA"}


class SpellOut(Task):
    """Characters in, whitespace tokens out: ``"cab"`` -> ``"CHARLIE ALPHA BRAVO"``, each output
    token aligned to its character (the shape of grapheme-to-phoneme data)."""

    source_alphabet = "abcd"
    target_alphabet = " ".join(NAMES.values())
    target_tokenization = "whitespace"

    def __init__(self, max_length: int = 6, **options):
        self.max_length = max_length
        super().__init__(**options)

    @property
    def max_source_length(self) -> int:
        return self.max_length

    def sample(self, rng: random.Random) -> Example:
        source = "".join(rng.choice("abcd") for _ in range(rng.randint(1, self.max_length)))
        return Example(source, " ".join(NAMES[ch] for ch in source), tuple((i,) for i in range(len(source))))


class WordReversal(Task):
    """Whitespace tokens on both sides: ``"one two"`` -> ``"two one"``."""

    source_alphabet = target_alphabet = ("one", "two", "three", "four", "five")
    source_tokenization = target_tokenization = "whitespace"

    @property
    def max_source_length(self) -> int:
        return 5

    def sample(self, rng: random.Random) -> Example:
        words = [rng.choice(self.source_alphabet) for _ in range(rng.randint(1, 5))]
        return Example(" ".join(words), " ".join(reversed(words)), tuple((len(words) - 1 - i,) for i in range(len(words))))


class AlignedByCharacter(SpellOut):
    """Breaks the contract: one alignment entry per target character, not per token."""

    def sample(self, rng: random.Random) -> Example:
        example = super().sample(rng)
        return example._replace(alignment=tuple((0,) for _ in example.target))


class SpacedTwice(SpellOut):
    """Breaks the contract: tokens joined by two spaces (decoding gives them back with one)."""

    def sample(self, rng: random.Random) -> Example:
        example = super().sample(rng)
        return example._replace(target=example.target.replace(" ", "  "))
'''


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    """The module of :data:`TOKEN_TASKS`, installed with entry points ``spell_out`` and
    ``word_reversal`` in group ``attnlab.tasks``."""
    import importlib
    import sys

    root = tmp_path_factory.mktemp("site")
    (root / "thirdparty_tokens.py").write_text(TOKEN_TASKS)
    info = root / "thirdparty_tokens-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-tokens\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[attnlab.tasks]\nspell_out = thirdparty_tokens:SpellOut\nword_reversal = thirdparty_tokens:WordReversal\n"
    )
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("thirdparty_tokens")
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("thirdparty_tokens", None)


@pytest.mark.parametrize("name", ["SpellOut", "WordReversal"])
def test_token_tasks_pass_the_kit(tasks, name):
    check_task(getattr(tasks, name))


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        ("AlignedByCharacter", ["alignment of target", "one entry per target token"]),
        ("SpacedTwice", ["tokens joined by one space"]),
    ],
)
def test_the_kit_names_what_a_token_task_breaks(tasks, name, needles):
    with pytest.raises(PluginContractError) as caught:
        check_task(getattr(tasks, name))
    assert all(needle in str(caught.value) for needle in needles), str(caught.value)


def test_a_whitespace_vocabulary_encodes_tokens_and_decodes_them_joined_by_one_space():
    vocab = Vocab.from_alphabet("P EY1 S T", "whitespace")
    assert vocab.tokens == ("EY1", "P", "S", "T") and len(vocab) == 8
    ids = vocab.encode("P  EY1 S T\n", sos=True, eos=True)
    assert ids == [1, 5, 4, 6, 7, 2]
    assert vocab.decode(ids[1:]) == "P EY1 S T"
    assert vocab.encode("P XX") == [5, 3]  # an unknown token is UNK, not its characters
    assert Vocab.from_alphabet("abc").encode("cab") == [6, 4, 5]  # characters as before


def test_check_source_counts_and_names_tokens(tasks):
    task = tasks.WordReversal()
    assert task.check_source("one two") is None
    assert task.check_source("one six seven") == "has token(s) 'seven six' outside this task's tokens: five four one three two"
    assert task.check_source("one " * 6) == "has 6 tokens; this task's sources have at most 5"
    assert task.check_source("   ") == "is no source: the source is empty; give at least one token"
    assert tasks.SpellOut().check_source("abx") == "has character(s) 'x' outside this task's alphabet 'abcd'"


@pytest.fixture(scope="module")
def spelled(tasks, tmp_path_factory):
    """A model of SpellOut trained for a few hundred steps, its evaluation, and its bundle folder."""
    from attnlab.data.splits import encode_examples
    from attnlab.evaluation.metrics import evaluate
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model
    from attnlab.model.bundle import save_bundle
    from attnlab.training.loop import train

    task = tasks.SpellOut()
    config = ExperimentConfig(task="spell_out", scorer="additive", embedding_dim=16, hidden_size=32, epochs=6, batch_size=32)
    model = build_model(config, task)
    examples, test = task.generate(600, seed=0), task.generate(60, seed=1)
    encoded = [encode_examples(split, model.src_vocab, model.tgt_vocab) for split in (examples, test)]
    train(model, *encoded, config)
    folder = save_bundle(tmp_path_factory.mktemp("bundle") / "spell", config, model)
    return task, model, evaluate(model, test), folder


def test_a_token_model_learns_and_is_measured_in_tokens(spelled):
    _, _, evaluation, _ = spelled
    metrics, frame = evaluation.metrics, evaluation.predictions
    assert metrics["exact_match"] > 0.5, metrics
    # Every measure counts tokens: the error rate is a token edit distance, the source length a
    # count of characters (this task's sources are characters), and the alignment one step per token.
    from attnlab.evaluation.edit_distance import token_error_rate

    want = token_error_rate([p.split() for p in frame["prediction"]], [[t.split()] for t in frame["target"]])
    assert metrics["token_error_rate"] == pytest.approx(want)
    assert list(frame["source_length"]) == [len(s) for s in frame["source"]]
    assert metrics["alignment_accuracy"] > 0.5, metrics


def test_predict_gives_tokens_and_weights_over_them(spelled):
    from attnlab.model.predict import predict

    task, model, _, _ = spelled
    [prediction] = predict(model, task, ["cab"])
    assert prediction.source_tokens == ["c", "a", "b"]
    assert prediction.output == " ".join(t for t in prediction.output_tokens if t != "<eos>")
    assert len(prediction.weights) == len(prediction.output_tokens) and {len(row) for row in prediction.weights} == {3}


def test_a_bundle_keeps_a_token_vocabulary(spelled):
    from attnlab.model.bundle import load_bundle
    from attnlab.model.predict import predict

    task, model, _, folder = spelled
    saved = json.loads((folder / "vocab.json").read_text())
    assert saved == {"source": "abcd", "target": ["ALPHA", "BRAVO", "CHARLIE", "DELTA"]}
    _, _, loaded = load_bundle(folder)
    assert loaded.tgt_vocab == model.tgt_vocab and loaded.src_vocab == model.src_vocab
    assert [p.output for p in predict(loaded, task, ["dab", "c"])] == [p.output for p in predict(model, task, ["dab", "c"])]


def test_a_source_with_several_targets_is_right_when_the_output_is_any_of_them(spelled):
    from attnlab.evaluation.metrics import evaluate, score_exact_match
    from attnlab.model.predict import predict
    from attnlab.plugins import Example

    task, model, _, _ = spelled
    [answer] = predict(model, task, ["cab"])
    other = "DELTA DELTA DELTA DELTA"
    assert answer.output != other
    both = [Example("cab", other, None), Example("cab", answer.output, None)]
    evaluation = evaluate(model, both)
    assert len(evaluation.predictions) == 1 and bool(evaluation.predictions["correct"][0])
    assert evaluation.predictions["target"][0] == answer.output  # measured against the closest reference
    assert (evaluation.metrics["exact_match"], evaluation.metrics["token_error_rate"], evaluation.metrics["sequence_error_rate"]) == (
        1.0,
        0.0,
        0.0,
    )
    assert score_exact_match(model, both) == 1.0
    wrong = evaluate(model, [Example("cab", other, None)])
    assert wrong.metrics["exact_match"] == 0.0 and wrong.metrics["sequence_error_rate"] == 1.0


def test_the_explorer_shows_the_evaluations_verdict_for_a_source_with_several_targets(spelled):
    from attnlab.plugins import Example
    from attnlab.viz.explorer_data import run_examples

    _, model, _, _ = spelled
    # The first target given for "cab" is not the output, but the evaluation found the output
    # among its other targets: the page must say right, as the metrics do.
    shown, _ = run_examples(model, [Example("cab", "DELTA DELTA DELTA DELTA", None)], correct=[True])
    assert [view["correct"] for view in shown] == [True]
    shown, _ = run_examples(model, [Example("cab", "DELTA DELTA DELTA DELTA", None)])
    assert [view["correct"] for view in shown] == [False]
