"""The explorer's documents: views of every kind from one teacher-forced pass (equal to what
greedy decoding used), wrong examples first with a cap and a note, snapshots per epoch, the
sweep's shared inputs."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch

from attnlab.data.splits import make_splits, split_sizes
from attnlab.data.vocab import pad_batch
from attnlab.evaluation.attribution import METHODS, attribute
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.predict import predict
from attnlab.plugins import Example
from attnlab.training.experiment import train_model
from attnlab.training.progress import StepProgress
from attnlab.viz.explorer_data import (
    SnapshotRecorder,
    first_epoch_steps,
    inputs_document,
    model_views,
    opening_model,
    run_document,
    run_examples,
    sample_note,
    sweep_document,
    views_of,
)
from attnlab.viz.explorer_views import EXPLAINED_EXAMPLES, attribution_shares, explained_on_page, explanations_of

TINY = dict(hidden_size=16, embedding_dim=8)
DATES = ["25-12-2023", "01-02-2003", "07-08-2009"]
DIGITS = ["12345", "987", "4455667"]  # reversal: sources of different lengths, padded in one batch


def tiny(**fields):
    config = ExperimentConfig(**{**TINY, **fields})
    task = build_task(config)
    return config, task, build_model(config, task)


def examples(task, count: int, seed: int = 3) -> list[Example]:
    return [task.sample(random.Random(seed + i)) for i in range(count)]


def close(shown, expected) -> None:
    """Equal up to the 4 decimals the documents keep."""
    torch.testing.assert_close(torch.tensor(shown), torch.tensor(expected), atol=1e-4, rtol=0)


def check_matrix(matrix, rows: int, cols: int) -> None:
    assert len(matrix) == rows and all(len(row) == cols for row in matrix)
    assert all(abs(sum(row) - 1) < 1e-3 and min(row) >= 0 for row in matrix)


@pytest.mark.parametrize(
    "fields,views",
    [
        (dict(), ["average"]),
        (dict(scorer="multihead", scorer_options={"heads": 2}), ["average", "head 1", "head 2"]),
        (
            dict(scorer="multihead", scorer_options={"heads": 2}, decoder="transformer", decoder_options={"layers": 2, "heads": 2}),
            ["average", "head 1", "head 2", "layer 1", "layer 2"],
        ),
        (dict(decoder="transformer", decoder_options={"layers": 1, "heads": 2}), ["average"]),  # one layer: the average itself
    ],
)
def test_every_view_has_one_row_per_output_token_and_one_column_per_source_token(fields, views):
    _, task, model = tiny(**fields)
    shown = model_views(model, examples(task, 3) + DATES[:1])
    assert views_of(shown) == views
    for example in shown:
        assert list(example["weights"]) == views
        for matrix in example["weights"].values():
            check_matrix(matrix, len(example["output_tokens"]), len(example["source_tokens"]))
    if "layer 2" in views:
        for example in shown:  # the decoder's reported weights are its last layer's
            assert example["weights"]["layer 2"] == example["weights"]["average"]
            assert example["weights"]["layer 1"] != example["weights"]["average"]


def test_a_model_without_attention_has_no_views():
    _, task, model = tiny(scorer="none")
    shown = model_views(model, examples(task, 2))
    assert views_of(shown) == [] and all(example["weights"] == {} for example in shown)
    recorder = SnapshotRecorder(examples(task, 2))
    recorder.watch(model)
    recorder.record(1)
    assert recorder.snapshots() is None


@pytest.mark.parametrize(
    "fields,sources",
    [
        (dict(), DATES),  # gru encoder, rnn decoder, scaled_dot: the fused steps
        (dict(task="reverse"), DIGITS),
        (dict(task="reverse", scorer="additive", decoder_options={"cell": "lstm"}), DIGITS),
        (dict(scorer="multihead", scorer_options={"heads": 2}, decoder="transformer", decoder_options={"layers": 2, "heads": 2}), DATES),
        (
            dict(task="reverse", encoder="transformer", decoder="transformer", decoder_options={"heads": 2}, encoder_options={"heads": 2}),
            DIGITS,
        ),
    ],
)
def test_the_teacher_forced_pass_gives_the_weights_greedy_decoding_used(fields, sources):
    _, task, model = tiny(**fields)
    predicted = predict(model, task, sources)
    shown = model_views(model, sources)
    for p, example in zip(predicted, shown):
        assert example["output_tokens"] == p.output_tokens and example["source_tokens"] == p.source_tokens
        assert example["target"] is None and example["correct"] is None and example["gold"] is None
        close(example["weights"]["average"], p.weights)
        if p.head_weights is not None:
            for h, heads in enumerate(p.head_weights):
                close(example["weights"][f"head {h + 1}"], heads)


@pytest.mark.parametrize(
    "fields", [dict(task="reverse"), dict(task="reverse", scorer="none", decoder="transformer", decoder_options={"heads": 2})]
)
def test_the_first_inputs_asked_are_explained_by_each_method_as_shares_of_its_attribution_of_the_output(fields):
    _, task, model = tiny(**fields)
    shown = model_views(model, DIGITS, explain=2, steps=2)
    assert [list(example.get("explained", {})) for example in shown] == [list(METHODS), list(METHODS), []]
    assert explanations_of(shown) == list(METHODS)
    for example in shown[:2]:
        for matrix in example["explained"].values():
            check_matrix(matrix, len(example["output_tokens"]), len(example["source_tokens"]))
    # the shares are those of the attribution of the greedy output shown, row by row
    src, mask = pad_batch([model.src_vocab.encode(text) for text in DIGITS[:2]])
    ids = {model.tgt_vocab.token(i): i for i in range(len(model.tgt_vocab))}
    for row, example in enumerate(shown[:2]):
        outputs = torch.tensor([[ids[t] for t in example["output_tokens"]]])
        length = len(example["source_tokens"])
        found = attribute(model, src[row : row + 1, :length], mask[row : row + 1, :length], outputs, "integrated_gradients", steps=2)
        close(example["explained"]["integrated_gradients"], attribution_shares(found)[0].tolist())
    assert model_views(model, DIGITS[:1])[0].keys() == shown[2].keys()  # not asked: no attributions


def test_attribution_shares_are_each_rows_absolute_attribution_over_its_sum():
    shares = attribution_shares(torch.tensor([[[-1.0, 3.0, 0.0], [0.0, 0.0, 0.0]]]))
    assert shares.tolist() == [[[0.25, 0.75, 0.0], [0.0, 0.0, 0.0]]]


def test_a_run_page_explains_its_first_examples_and_says_so():
    _, task, model = tiny()
    document = run_document(model, examples(task, 6), "run", explain=2, steps=2)
    assert document["models"][0]["explanations"] == list(METHODS)
    assert sum("explained" in example for example in document["models"][0]["examples"]) == 2
    assert document["note"].endswith("; the first 2 explained by gradient attributions too")
    plain = run_document(model, examples(task, 6), "run")
    assert plain["models"][0]["explanations"] == [] and "explained" not in plain["note"]
    assert explained_on_page(ExperimentConfig()) == EXPLAINED_EXAMPLES and explained_on_page(ExperimentConfig(explain_examples=0)) == 0


def test_examples_carry_their_target_and_gold_cut_to_the_output():
    _, task, model = tiny()
    chosen = examples(task, 4)
    for example, shown in zip(chosen, model_views(model, chosen)):
        output = "".join(t for t in shown["output_tokens"] if t != "<eos>")
        assert shown["target"] == example.target and shown["correct"] == (output == example.target)
        steps = min(len(example.alignment), len(shown["output_tokens"]))
        assert shown["gold"] == [list(g) for g in example.alignment[:steps]]


def crafted(task, model, count: int, right: set[int]) -> list[Example]:
    """Test examples of which exactly those at ``right`` are answered right by ``model``: their
    target is set to the model's own output."""
    chosen = examples(task, count)
    outputs = ["".join(t for t in v["output_tokens"] if t != "<eos>") for v in model_views(model, chosen)]
    assert all(out != ex.target for out, ex in zip(outputs, chosen))  # an untrained model gets none right
    return [Example(ex.source, out, None) if i in right else ex for i, (ex, out) in enumerate(zip(chosen, outputs))]


def test_wrong_examples_come_first_then_right_ones_capped_with_a_note():
    _, task, model = tiny()
    tests = crafted(task, model, 8, right={0, 2, 5, 6})
    shown, note = run_examples(model, tests, limit=6)
    order = [tests.index(next(ex for ex in tests if ex.source == "".join(s["source_tokens"]))) for s in shown]
    assert order == [1, 3, 4, 7, 0, 2]
    assert [s["correct"] for s in shown] == [False] * 4 + [True] * 2
    assert note == "6 of 8 test examples: every wrong one (4), then right ones in test order"
    shown, note = run_examples(model, tests, limit=3)
    assert [s["correct"] for s in shown] == [False] * 3
    assert note == "3 of 8 test examples: the first 3 of the 4 wrong ones, in test order"
    shown, note = run_examples(model, tests)
    assert len(shown) == 8 and note == "all 8 test examples (4 wrong), wrong ones first"


def test_sample_notes():
    assert sample_note(1000, 12, 200) == "200 of 1,000 test examples: every wrong one (12), then right ones in test order"
    assert sample_note(50, 1, 50) == "all 50 test examples (1 wrong), wrong ones first"
    assert sample_note(1000, 0, 200) == "200 of 1,000 test examples, all answered right: the first 200 in test order"


@pytest.mark.slow
def test_snapshots_after_every_epoch_leave_training_as_it_was():
    config = ExperimentConfig(**TINY, train_size=200, validation_size=30, test_size=10, epochs=3, target_exact_match=None)
    task = build_task(config)
    splits = make_splits(task, (200, 30, 10), 0)
    recorder = SnapshotRecorder(splits.validation[:3])
    _, watched = train_model(config, task, splits, on_epoch=lambda m: recorder.record(int(m["epoch"])), on_model=recorder.watch)
    _, plain = train_model(config, task, splits)
    assert [h["train_loss"] for h in watched.history] == [h["train_loss"] for h in plain.history]
    assert [h["val_loss"] for h in watched.history] == [h["val_loss"] for h in plain.history]
    snapshots = recorder.snapshots()
    assert snapshots["epochs"] == [1, 2, 3]
    assert len(snapshots["examples"]) == 3
    for probe, entry in zip(splits.validation[:3], snapshots["examples"]):
        assert entry["source_tokens"] == list(probe.source)
        assert entry["output_tokens"] == [*probe.target, "<eos>"]
        assert entry["gold"] == [list(g) for g in probe.alignment]
        assert len(entry["weights"]) == 3
        for matrix in entry["weights"]:
            check_matrix(matrix, len(probe.target) + 1, len(probe.source))
        assert entry["weights"][0] != entry["weights"][-1]  # training moved the attention
    assert recorder.seconds > 0


def test_recording_keeps_the_model_mode():
    _, task, model = tiny()
    recorder = SnapshotRecorder(examples(task, 2))
    recorder.watch(model.train())
    recorder.record(1)
    assert model.training
    with pytest.raises(RuntimeError, match="watch"):
        SnapshotRecorder(examples(task, 1)).record(1)


def test_documents_are_json_and_pass_the_page_checks():
    explorer = pytest.importorskip("attnlab.viz.explorer")
    config, task, model = tiny(scorer="multihead", scorer_options={"heads": 2})
    recorder = SnapshotRecorder(examples(task, 3))
    recorder.watch(model)
    recorder.record(1)
    metrics = {"test_exact_match": 0.5, "test_alignment_accuracy": float("nan")}
    run = run_document(model, examples(task, 5), "multihead-gru-rnn-seed0", "date task", metrics, recorder.snapshots())
    assert run["title"] == "attnlab run multihead-gru-rnn-seed0"
    assert run["models"][0]["metrics"] == {"exact_match": 0.5}  # NaN left out
    given = inputs_document(model, ["25-12-2023"], "models:/attnlab-date/1")
    for document in (run, given):
        json.dumps(document, allow_nan=False)
        assert 'id="explorer-data"' in explorer.explorer_html(document)
    assert given["models"][0]["examples"][0]["gold"] is None and given["models"][0]["snapshots"] is None


def test_a_sweep_page_shows_every_model_on_the_same_inputs_most_missed_first():
    _, task, first = tiny()
    _, _, second = tiny(scorer="additive")
    tests = crafted(task, first, 4, right={0, 1})
    sources = [ex.source for ex in tests]
    models = [
        {"name": name, "metrics": {}, "views": ["average"], "examples": model_views(model, sources), "snapshots": None}
        for name, model in (("scaled_dot seed 0", first), ("additive seed 0", second))
    ]
    document = sweep_document("attnlab sweep", models, tests, note="4 test examples")
    # first model: 0 and 1 right; second model: all wrong -> examples 2, 3 (missed twice) first.
    for entry in document["models"]:
        assert ["".join(e["source_tokens"]) for e in entry["examples"]] == [sources[i] for i in (2, 3, 0, 1)]
        assert all(e["target"] == tests[i].target for e, i in zip(entry["examples"], (2, 3, 0, 1)))
    assert [e["correct"] for e in document["models"][0]["examples"]] == [False, False, True, True]
    assert [e["correct"] for e in document["models"][1]["examples"]] == [False] * 4
    with pytest.raises(ValueError, match="other sources"):
        sweep_document("attnlab sweep", models, tests[:3])
    explorer = pytest.importorskip("attnlab.viz.explorer")
    explorer.explorer_html(document)
    # A source with several targets: an output equal to another of them is right, shown with it.
    output = models[1]["examples"][2]["output"]
    answered = sweep_document("attnlab sweep", models, tests, references={sources[2]: [tests[2].target, output]})
    shown = next(e for e in answered["models"][1]["examples"] if "".join(e["source_tokens"]) == sources[2])
    assert shown["correct"] and shown["target"] == output


def test_given_verdicts_spare_the_decoding_and_a_budget_cuts_the_examples(monkeypatch):
    from attnlab.viz import explorer_data

    _, task, model = tiny()
    tests = crafted(task, model, 8, right={0, 2, 5, 6})
    verdicts = [i in {0, 2, 5, 6} for i in range(8)]
    monkeypatch.setattr(explorer_data, "decode_texts", lambda *a, **k: pytest.fail("decoded again"))
    shown, note = run_examples(model, tests, limit=6, correct=verdicts)
    assert [s["correct"] for s in shown] == [False] * 4 + [True] * 2
    with pytest.raises(ValueError, match="7 verdicts for 8 examples"):
        run_examples(model, tests, correct=verdicts[:7])
    each = explorer_data.weight_count(shown[0])
    assert each == len(shown[0]["output_tokens"]) * len(shown[0]["source_tokens"])
    monkeypatch.setattr(explorer_data, "WEIGHT_BUDGET", 3 * each)
    monkeypatch.setattr(explorer_data, "BUDGET_BATCH", 2)
    shown, note = run_examples(model, tests, limit=6, correct=verdicts)
    assert len(shown) == 3 and all(s["correct"] is False for s in shown)
    assert note == "3 of 8 test examples: the first 3 of the 4 wrong ones, in test order (fewer, to keep the page small)"


def test_within_budget_keeps_the_leading_items_that_fit_and_at_least_one():
    from attnlab.viz.explorer_data import within_budget

    assert within_budget([10, 10, 10], 25) == 2
    assert within_budget([10, 10, 10], 30) == 3
    assert within_budget([10, 10, 10], 5) == 1
    assert within_budget([], 5) == 0


@pytest.mark.slow
def test_a_page_of_the_largest_default_sized_model_stays_under_one_megabyte():
    """Four heads and two layers (seven views) of an untrained model, whose outputs run to the
    step limit: the weight budget cuts the examples before the page reaches 1 MB."""
    explorer = pytest.importorskip("attnlab.viz.explorer")
    config, task, model = tiny(scorer="multihead", decoder="transformer", hidden_size=32)
    tests = examples(task, 200)
    shown, note = run_examples(model, tests, correct=[False] * 200)
    assert views_of(shown) == ["average", "head 1", "head 2", "head 3", "head 4", "layer 1", "layer 2"]
    assert 0 < len(shown) < 200 and note.endswith("(fewer, to keep the page small)")
    document = {"version": 1, "title": "t", "models": [{"name": "m", "views": views_of(shown), "examples": shown, "snapshots": None}]}
    assert len(explorer.explorer_html(document).encode()) < 1_000_000


def test_layer_weights_of_the_wrong_shape_are_refused_by_name():
    from attnlab.viz.explorer_views import weight_views

    weights = torch.full((2, 3, 4), 0.25)
    layers = torch.stack([weights, weights], dim=1)
    assert list(weight_views(weights, None, layers)) == ["average", "layer 1", "layer 2"]
    with pytest.raises(ValueError, match=r"layer_weights has shape \[2, 3, 2, 4\]"):
        weight_views(weights, None, layers.transpose(1, 2))


def test_first_epoch_steps_spread_about_eight_snapshots_over_the_epoch():
    assert first_epoch_steps(47) == [6, 12, 18, 24, 30, 36, 42]  # the default run: 3000 examples, batch 64
    assert first_epoch_steps(24) == [3, 6, 9, 12, 15, 18, 21]
    assert first_epoch_steps(8) == [1, 2, 3, 4, 5, 6, 7]
    assert first_epoch_steps(3) == [1, 2]
    assert first_epoch_steps(1) == []  # the epoch's end is its only step


def progress(epoch: int, step: int, steps: int) -> StepProgress:
    return StepProgress(epoch, 3, step, steps, (epoch - 1) * steps + step, step, steps, 1.0, 1.0, 1.0)


@pytest.mark.slow
def test_the_recorder_records_before_training_at_its_steps_in_the_first_epoch_and_after_epochs():
    _, task, model = tiny()
    recorder = SnapshotRecorder(examples(task, 2), examples(task, 5, seed=50), from_start=True)
    recorder.watch(model)
    recorded = []
    for epoch in (1, 2):
        for step in range(1, 9):
            recorded.append(recorder.step(progress(epoch, step, 8)))
        recorder.record(epoch)
    assert recorded == [True] * 7 + [False] + [False] * 8  # steps 1-7 of epoch 1; 8 is its end
    snapshots = recorder.snapshots()
    assert snapshots["steps"] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 16]
    assert snapshots["epochs"] == [0, 1, 1, 1, 1, 1, 1, 1, 1, 2]
    assert snapshots["labels"][:2] == ["before training", "step 1, in epoch 1"]
    assert snapshots["labels"][-2:] == ["after epoch 1 (step 8)", "after epoch 2 (step 16)"]
    assert all(len(entry["weights"]) == 10 for entry in snapshots["examples"])
    assert [point["step"] for point in recorder.curve] == snapshots["steps"]
    assert [point["end_of_epoch"] for point in recorder.curve] == [False] * 8 + [True] * 2
    for point in recorder.curve:
        assert 0 <= point["exact_match"] <= 1 and 0 <= point["alignment_accuracy"] <= 1
        assert point["alignment_accuracy"] <= point["alignment_within_one"] <= 1


def test_the_curve_measures_greedy_exact_match_and_teacher_forced_alignment():
    from attnlab.evaluation.metrics import evaluate

    _, task, model = tiny()
    measured = examples(task, 6, seed=70)
    recorder = SnapshotRecorder([], measured)
    recorder.watch(model)
    recorder.record(1)
    expected = evaluate(model, measured).metrics
    (point,) = recorder.curve
    for key in ("exact_match", "alignment_accuracy", "alignment_within_one"):
        assert point[key] == pytest.approx(expected[key])


def test_a_model_without_attention_still_has_an_exact_match_curve():
    _, task, model = tiny(scorer="none")
    recorder = SnapshotRecorder(examples(task, 2), examples(task, 4, seed=40))
    recorder.watch(model)
    recorder.record(1)
    assert recorder.snapshots() is None
    (point,) = recorder.curve
    assert point["exact_match"] == 0.0 and math.isnan(point["alignment_accuracy"])


@pytest.mark.slow
@pytest.mark.parametrize("measured", [0, 30])
def test_recording_inside_epochs_leaves_training_as_it_was(measured):
    config = ExperimentConfig(**TINY, train_size=256, validation_size=30, test_size=10, epochs=2, batch_size=32,
                              decoder_options={"dropout": 0.3}, target_exact_match=None)  # fmt: skip
    task = build_task(config)
    splits = make_splits(task, (256, 30, 10), 0)
    recorder = SnapshotRecorder(splits.validation[:3], splits.validation[:measured], from_start=True)
    _, watched = train_model(config, task, splits, on_epoch=lambda m: recorder.record(int(m["epoch"])),
                             on_step=recorder.step, on_model=recorder.watch)  # fmt: skip
    _, plain = train_model(config, task, splits)
    assert [h["train_loss"] for h in watched.history] == [h["train_loss"] for h in plain.history]
    assert [h["val_loss"] for h in watched.history] == [h["val_loss"] for h in plain.history]
    assert recorder.snapshots()["steps"] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 16]


@pytest.mark.slow
def test_a_default_sized_run_that_stops_after_one_epoch_has_snapshots_inside_it():
    config = ExperimentConfig()  # the default run: it reaches its target exact match in epoch 1
    task = build_task(config)
    splits = make_splits(task, split_sizes(task, (config.train_size, config.validation_size, config.test_size)), config.seed)
    recorder = SnapshotRecorder(splits.validation[:3], splits.validation[:100], from_start=True)
    _, result = train_model(config, task, splits, on_epoch=lambda m: recorder.record(int(m["epoch"])),
                            on_step=recorder.step, on_model=recorder.watch)  # fmt: skip
    assert len(result.history) == 1 and result.stopped_early
    snapshots = recorder.snapshots()
    assert snapshots["steps"] == [0, 6, 12, 18, 24, 30, 36, 42, 47]
    curve = recorder.curve
    assert curve[-1]["exact_match"] > curve[0]["exact_match"]
    assert curve[-1]["alignment_within_one"] > curve[0]["alignment_within_one"]  # attention moved toward the gold


def entry(name: str, exact_match: float | None, views: list[str] | None = None, alignment: float | None = None) -> dict:
    metrics = {key: value for key, value in (("exact_match", exact_match), ("alignment_accuracy", alignment)) if value is not None}
    return {"name": name, "metrics": metrics, "views": ["average"] if views is None else views}


def test_a_comparison_opens_on_the_best_model_with_attention():
    none = entry("none seed 0", 1.0, views=[])  # the best score, but nothing to look at
    models = [none, entry("dot seed 0", 0.5), entry("additive seed 0", 0.9), entry("general seed 0", 0.7)]
    assert opening_model(models) == 2


def test_ties_go_to_alignment_accuracy_then_to_the_first_model():
    models = [
        entry("none", 0.9, views=[]),
        entry("dot", 0.9, alignment=0.4),
        entry("additive", 0.9, alignment=0.6),
        entry("general", 0.9, alignment=0.6),
    ]
    assert opening_model(models) == 2
    assert opening_model([entry("dot", 0.9), entry("additive", 0.9)]) == 0
    assert opening_model([entry("dot", 0.8, alignment=float("nan")), entry("additive", 0.8, alignment=0.1)]) == 1


def test_models_without_a_score_come_last_and_without_attention_the_first_opens():
    assert opening_model([entry("dot", None), entry("additive", float("nan")), entry("general", 0.0)]) == 2
    assert opening_model([entry("none a", 0.3, views=[]), entry("none b", 0.9, views=[])]) == 0


def test_a_sweep_page_says_which_model_it_opens_on():
    explorer = pytest.importorskip("attnlab.viz.explorer")
    _, task, first = tiny(scorer="none")
    _, _, second = tiny(scorer="additive")
    tests = examples(task, 2)
    sources = [ex.source for ex in tests]
    models = [
        {**entry(name, score), "views": views_of(shown), "examples": shown, "snapshots": None}
        for name, score, shown in (
            ("none seed 0", 0.9, model_views(first, sources)),
            ("additive seed 0", 0.1, model_views(second, sources)),
        )
    ]
    document = sweep_document("attnlab sweep", models, tests, note="2 test examples")
    assert document["opens_on"] == 1
    assert '"opens_on":1' in explorer.explorer_html(document)
    with pytest.raises(ValueError, match="opens_on"):
        explorer.explorer_html({**document, "opens_on": 2})
