"""The summaries people read: a train run's lines, a sweep's, each finished sweep run's line and
the error line of an unusable champion."""

from __future__ import annotations

from attnlab.lab.summaries import (
    attention_lines,
    explanation_lines,
    finish_line,
    format_summary,
    format_sweep,
    kept_weights,
    unusable_champion,
)

MODEL = {"name": "attnlab-date", "version": "3", "uri": "models:/attnlab-date/3", "champion": False, "champion_version": "2"}
SUMMARY = {
    "run_id": "abc", "experiment": "attnlab-date", "epochs": 4, "train_seconds": 12.34, "stopped_early": True,
    "metrics": {"test_exact_match": 0.5, "test_char_accuracy": 0.75}, "ui": "http://ui",
}  # fmt: skip


def test_the_summary_leaves_out_what_a_scorer_without_attention_lacks():
    assert attention_lines({"test_exact_match": 1.0}) == []
    lines = attention_lines({
        "test_alignment_within_one": 0.97, "test_alignment_offset_mode": 1.0, "test_alignment_shifted_accuracy": 0.96,
        "test_alignment_error_rate": 0.97, "test_erasure_examples": 500.0, "test_erasure_flip_top": 0.25,
        "test_erasure_flip_random": 0.0, "test_erasure_flip_gold": 0.5, "test_erasure_drop_top": 0.3,
        "test_erasure_drop_random": -0.001, "test_erasure_drop_gold": 0.4,
    })  # fmt: skip
    assert lines == [
        "alignment: within one 0.9700  offset mode +1  shifted by the mode 0.9600  error rate (AER) 0.9700",
        "erasure (500 test examples): flip rate top 0.2500  random 0.0000  gold 0.5000;  "
        "probability drop top 0.3000  random -0.0010  gold 0.4000",
    ]


def test_the_explanations_are_one_table_a_row_per_measure_a_column_per_explanation():
    names = ("attention", "saliency", "input_x_gradient", "integrated_gradients")
    measures = ("error_rate", "within_one", "shifted_accuracy", "comprehensiveness", "sufficiency", "flip_top1", "tau_attention")
    metrics = {f"test_explain_{n}_{m}": 0.1 * i + 0.01 * j for i, n in enumerate(names) for j, m in enumerate(measures)}
    del metrics["test_explain_attention_tau_attention"]
    lines = explanation_lines({**metrics, "test_explain_examples": 30.0})
    assert lines[0].split() == ["explanations", "(30", "test", "examples)", *names]
    assert lines[1].split() == ["error", "rate", "(AER)", "0.0000", "0.1000", "0.2000", "0.3000"]
    assert lines[6].split() == ["flip", "rate", "(top", "1", "erased)", "0.0500", "0.1500", "0.2500", "0.3500"]
    assert lines[7].split()[-4:] == ["-", "0.1600", "0.2600", "0.3600"]  # attention's tau with itself is no measure
    assert [len(line) for line in lines[1:]] == [len(lines[0])] * 7  # each value under its explanation's name
    # a task without gold alignments has no alignment rows; a run that scored none, no table
    unaligned = {k: v for k, v in metrics.items() if not k.endswith(("error_rate", "within_one", "shifted_accuracy"))}
    assert [line.split("  ")[1] for line in explanation_lines({**unaligned, "test_explain_examples": 30.0})[1:]] == [
        "comprehensiveness", "sufficiency", "flip rate (top 1 erased)", "Kendall's tau with attention"]  # fmt: skip
    assert explanation_lines(metrics) == [] and attention_lines({"test_exact_match": 1.0}) == []
    assert attention_lines({**metrics, "test_explain_examples": 30.0}) == lines


def test_a_train_summary_says_what_became_of_the_model():
    decision = {"reason": "0.9000 does not beat 0.9500", "champion_unusable": None}
    benchmark = {"size": 500, "run_id": "bench"}
    text = format_summary({**SUMMARY, "model": {**MODEL, "decision": decision, "benchmark": benchmark}})
    assert text.splitlines() == [
        "run abc FINISHED in experiment attnlab-date: 4 epoch(s), 12.3 s training, stopped early",
        "test:  exact_match 0.5000  char_accuracy 0.7500",
        "model: attnlab-date version 3 (models:/attnlab-date/3)",
        "promotion on the benchmark (500 examples, run bench): not champion (version 2 keeps the alias): 0.9000 does not beat 0.9500",
        "open the MLflow UI: http://ui",
    ]
    assert "promotion: registered, not promoted" in format_summary({**SUMMARY, "model": {**MODEL, "decision": None}})
    champion = {**MODEL, "champion": True, "champion_version": "3", "decision": {"reason": "first"}}
    assert "promotion: new champion: first" in format_summary({**SUMMARY, "model": champion})


def test_the_kept_weights_get_a_line_when_a_selection_was_asked_for():
    kept = {"selected_epoch": 3.0, "averaged_epochs": 1.0, "selected_val_exact_match": 0.95, "selected_val_loss": 0.1234}
    model = {**MODEL, "decision": None}

    def second_line(**selection) -> str:
        return format_summary({**SUMMARY, "model": model, "selection": {"epochs": 4, **kept, **selection}}).splitlines()[1]

    assert second_line(checkpoint="best", average_last=1) == (
        "weights: epoch 3 of 4, the best (highest validation exact match, ties broken by lower validation loss): "
        "validation exact match 0.9500, loss 0.1234"
    )
    assert second_line(checkpoint="last", average_last=2, selected_epoch=4.0, averaged_epochs=2.0) == (
        "weights: the mean of epochs 3-4 of 4: validation exact match 0.9500, loss 0.1234"
    )
    assert second_line(checkpoint="last", average_last=1).startswith("test:")  # the default: the last epoch, said nowhere
    assert kept_weights({"checkpoint": "last", "average_last": 1, "epochs": 4, **kept}).startswith("epoch 3 of 4, the last:")


def test_an_unusable_champion_is_one_error_line_and_a_usable_one_none():
    unusable = {**MODEL, "decision": {"reason": "kept", "champion_unusable": "its files are missing"}}
    line = unusable_champion({**SUMMARY, "model": unusable})
    assert line.startswith("the champion of attnlab-date (version 2) cannot be loaded: its files are missing; version 3 was registered")
    assert "cannot be loaded (see the error line)" in format_summary({**SUMMARY, "model": unusable})
    assert unusable_champion({**SUMMARY, "model": {**MODEL, "decision": {"reason": "won"}}}) is None


def test_each_finished_sweep_run_gets_one_line():
    finished = {"label": "dot", "seed": 1, "status": "FINISHED", "summary": {**SUMMARY, "epochs": 1}}
    assert finish_line(2, 4, finished) == "[2/4] dot seed 1: exact_match 0.500  char_accuracy 0.750  (1 epoch, 12.3 s training)"
    failed = {"label": "additive", "seed": 0, "status": "FAILED", "error": "RuntimeError: boom"}
    assert finish_line(3, 4, failed) == "[3/4] additive seed 0: FAILED: RuntimeError: boom"


def test_a_sweep_summary_names_its_run_failures_plots_and_promotions():
    promotions = [{"label": "dot", "seed": 0, "model": "attnlab-date", "version": "4", "promoted": True, "reason": "first"}]
    summary = {"text": "TABLE", "parent_run_id": "p", "experiment": "attnlab-date", "run_count": 4, "combinations": 2, "failed": 1,
               "plots": ["plots/a.png"], "saved_plots": ["out/a.png"], "promotions": promotions}  # fmt: skip
    assert format_sweep(summary).splitlines() == [
        "TABLE",
        "",
        "sweep run p in experiment attnlab-date: 4 runs of 2 combinations, 1 failed",
        "plots (artifacts of the sweep run): plots/a.png",
        "copied to: out/a.png",
        "dot seed 0: attnlab-date version 4 champion: first",
    ]
