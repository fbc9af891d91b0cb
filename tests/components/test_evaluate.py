"""Metrics, per-length tables, greedy and beam decoding."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch

from attnlab.data.splits import encode_examples
from attnlab.evaluation.metrics import AttentionTally, char_accuracy, evaluate, exact_match, length_buckets, per_length_table
from attnlab.lab.config import ExperimentConfig
from attnlab.model.decode import beam_search, greedy_decode
from attnlab.plugins import Example
from attnlab.training.experiment import run_experiment


def test_exact_match_and_char_accuracy_by_hand():
    preds, targets = ["abc", "abd", "a"], ["abc", "abc", "abc"]
    assert exact_match(preds, targets) == pytest.approx(1 / 3)
    assert char_accuracy(preds, targets) == pytest.approx((3 + 2 + 1) / 9)


def test_length_buckets():
    assert length_buckets(pd.Series([5, 6, 7])).tolist() == ["5", "6", "7"]
    assert length_buckets(pd.Series([5, 14, 40]), max_buckets=4).tolist() == ["5-13", "14-22", "32-40"]


def test_per_length_table():
    frame = pd.DataFrame(
        {
            "source": ["ab", "cd", "efg"],
            "target": ["ba", "dc", "gfe"],
            "prediction": ["ba", "xc", "gfe"],
            "correct": [True, False, True],
            "source_length": [2, 2, 3],
        }
    )
    table = per_length_table(frame)
    assert table["length"].tolist() == ["2", "3"]
    assert table["count"].tolist() == [2, 1]
    assert table["exact_match"].tolist() == [0.5, 1.0]
    assert table["char_accuracy"].tolist() == [0.75, 1.0]


def test_attention_tally_by_hand():
    # one example, two target steps over three source positions (the last is padding)
    weights = torch.tensor([[[0.7, 0.3, 0.0], [0.2, 0.8, 0.0]]])
    tally = AttentionTally()
    example = Example("ab", "xy", ((1,), (1,)))
    tally.add(weights, torch.tensor([[True, True]]), torch.tensor([[True, True, False]]), [example])
    metrics = tally.metrics()
    assert metrics["alignment_accuracy"] == 0.5  # step 0 looks at 0 (gold 1), step 1 at 1
    entropy = lambda ps: -sum(p * math.log(p) for p in ps)  # noqa: E731
    assert metrics["attention_entropy"] == pytest.approx((entropy([0.7, 0.3]) + entropy([0.2, 0.8])) / 2)
    assert metrics["pad_attention_mass"] == 0.0


@pytest.fixture(scope="module")
def trained():
    config = ExperimentConfig(
        task="reverse",
        task_options={"min_length": 3, "max_length": 8},
        train_size=3000,
        validation_size=100,
        test_size=200,
        epochs=4,
        hidden_size=64,
        embedding_dim=32,
        scorer="additive",
        encoder="bigru",
    )
    return run_experiment(config)


@pytest.mark.slow
def test_evaluation_reports_every_metric(trained):
    metrics = trained.evaluation.metrics
    assert set(metrics) == {
        "exact_match", "char_accuracy", "token_error_rate", "sequence_error_rate", "alignment_accuracy", "attention_entropy",
        "pad_attention_mass", "alignment_within_one", "alignment_offset_mode", "alignment_shifted_accuracy", "alignment_error_rate",
        "erasure_examples", "erasure_flip_top", "erasure_flip_random", "erasure_flip_gold",
        "erasure_drop_top", "erasure_drop_random", "erasure_drop_gold",
    }  # fmt: skip
    assert metrics["pad_attention_mass"] == 0.0
    # A bidirectional encoder lets attention find the mirrored position (measured: 0.999).
    assert metrics["alignment_accuracy"] > 0.9
    table = trained.evaluation.per_length
    assert table["count"].sum() == 200 and list(table.columns) == ["length", "min_length", "count", "exact_match", "char_accuracy"]
    frame = trained.evaluation.predictions
    assert frame["correct"].mean() == pytest.approx(metrics["exact_match"])
    assert metrics["sequence_error_rate"] == pytest.approx(1 - metrics["exact_match"])  # one reference per source


@pytest.mark.slow
def test_greedy_batch_equals_one_at_a_time(trained):
    model, examples = trained.model, trained.splits.test[:20]
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab)
    batched = greedy_decode(model, data.src, data.src_mask, 20)
    for row, ex in enumerate(examples):
        alone = greedy_decode(model, data.src[row : row + 1, : len(ex.source)], data.src_mask[row : row + 1, : len(ex.source)], 20)
        assert model.tgt_vocab.decode(alone.tokens[0].tolist()) == model.tgt_vocab.decode(batched.tokens[row].tolist())


@pytest.mark.slow
def test_beam_search_is_at_least_as_likely_as_greedy(trained):
    model, examples = trained.model, trained.splits.test[:50]
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab)
    greedy = greedy_decode(model, data.src, data.src_mask, 20).tokens
    beam1 = beam_search(model, data.src, data.src_mask, 20, beam_size=1)
    assert [model.tgt_vocab.decode(r) for r in beam1.tolist()] == [model.tgt_vocab.decode(r) for r in greedy.tolist()]

    def log_prob(tokens):
        from attnlab.data.vocab import SOS

        tgt_in = torch.cat([torch.full((tokens.shape[0], 1), SOS), tokens[:, :-1]], dim=1)
        logp = model(data.src, data.src_mask, tgt_in).logits.log_softmax(-1)
        picked = logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
        return (picked * (tokens != 0)).sum(-1)

    with torch.no_grad():
        beam4 = beam_search(model, data.src, data.src_mask, 20, beam_size=4)
        width = max(beam4.shape[1], greedy.shape[1])
        pad = lambda t: torch.nn.functional.pad(t, (0, width - t.shape[1]))  # noqa: E731
        assert torch.all(log_prob(pad(beam4)) >= log_prob(pad(greedy)) - 1e-4)
    beam_texts = [model.tgt_vocab.decode(row) for row in beam4.tolist()]
    expected = sum(text == ex.target for text, ex in zip(beam_texts, examples)) / len(examples)
    beam_evaluation = evaluate(model, examples, beam_size=4)
    assert beam_evaluation.metrics["exact_match"] == expected
    # a beam evaluation reports greedy decoding's output metrics beside its own, and its verdicts
    greedy_evaluation = evaluate(model, examples)
    for name in ("exact_match", "char_accuracy", "token_error_rate", "sequence_error_rate"):
        assert beam_evaluation.metrics[f"greedy_{name}"] == greedy_evaluation.metrics[name]
        assert f"greedy_{name}" not in greedy_evaluation.metrics
    assert beam_evaluation.greedy_correct == greedy_evaluation.predictions["correct"].tolist()
    assert greedy_evaluation.greedy_correct == greedy_evaluation.predictions["correct"].tolist()


@pytest.mark.slow
def test_the_promotion_score_is_the_evaluation_exact_match():
    """A promotion decodes only; its score must be the exact match the full evaluation reports."""
    from attnlab.evaluation.metrics import evaluate, score_exact_match
    from attnlab.lab.config import ExperimentConfig
    from attnlab.training.experiment import run_experiment

    result = run_experiment(ExperimentConfig(train_size=300, validation_size=30, test_size=60, hidden_size=16, embedding_dim=8, epochs=2))
    full = evaluate(result.model, result.splits.test).metrics["exact_match"]
    assert score_exact_match(result.model, result.splits.test) == full
    wrong = [type(ex)(ex.source, ex.target + "x", ex.alignment) for ex in result.splits.test]
    assert score_exact_match(result.model, wrong) == 0.0


def test_each_source_outcome_adds_up_to_the_error_rates():
    """The per-source outcomes a run logs for paired tests (edits to the closest reference and
    its tokens) sum to the token error rate; a source with two references is one row."""
    from attnlab.model.assembly import build_model, build_task

    torch.manual_seed(42)
    config = ExperimentConfig(task="reverse", hidden_size=7, embedding_dim=7)
    model = build_model(config, build_task(config))
    examples = [Example("123", "321", None), Example("123", "32", None), Example("4567", "7654", None), Example("89", "98", None)]
    evaluation = evaluate(model, examples)
    frame = evaluation.predictions
    assert list(frame["source"]) == ["123", "4567", "89"] and (frame["edits"] > 0).any()
    assert frame["edits"].sum() / frame["tokens"].sum() == pytest.approx(evaluation.metrics["token_error_rate"])
    assert 1 - frame["correct"].mean() == pytest.approx(evaluation.metrics["sequence_error_rate"])
