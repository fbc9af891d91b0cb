"""Comparing runs: grid expansion, per-run rows, mean +- std over seeds, length bands, figures."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from attnlab.evaluation.compare import Grid, comparison_table, format_table, grid_configs, length_bands, run_rows
from attnlab.lab.config import ExperimentConfig
from attnlab.viz.compare_plots import accuracy_by_length, attention_side_by_side, learning_curves, mean_by_length


def _summary(exact: float, by_length: list[tuple[int, int, float]], seconds: float = 2.0) -> dict:
    return {
        "run_id": f"run-{exact}",
        "metrics": {"test_exact_match": exact, "test_char_accuracy": exact, "test_alignment_accuracy": 0.5},
        "train_seconds": seconds,
        "parameters": 1000,
        "by_length": [{"length": n, "count": c, "exact_match": e} for n, c, e in by_length],
        "history": [{"epoch": 1, "val_exact_match": exact / 2, "train_loss": 1.0}, {"epoch": 2, "val_exact_match": exact, "train_loss": 0.5}],
        "probe": {"source": "123", "source_tokens": ["1", "2", "3", "<eos>"], "output_tokens": ["3", "2", "1", "<eos>"],
                  "weights": [[0, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1]], "correct": True},
    }  # fmt: skip


def test_grid_expands_every_combination_and_seed_in_order():
    base = ExperimentConfig(task="reverse", epochs=3)
    grid = Grid({"scorer": ("none", "additive"), "encoder": ("gru", "bigru")}, (0, 1))
    configs = grid_configs(base, grid)
    assert [(c.scorer, c.encoder, c.seed) for c in configs] == [
        ("none", "gru", 0), ("none", "gru", 1), ("none", "bigru", 0), ("none", "bigru", 1),
        ("additive", "gru", 0), ("additive", "gru", 1), ("additive", "bigru", 0), ("additive", "bigru", 1),
    ]  # fmt: skip
    assert all(c.task == "reverse" and c.epochs == 3 for c in configs)
    assert [grid.label(c) for c in configs[::2]] == ["none/gru", "none/bigru", "additive/gru", "additive/bigru"]
    assert Grid({"scorer": ("dot",)}, (0,)).label(configs[0]) == "none"  # nothing varies: the scorer names it


def test_length_bands_weight_lengths_by_their_example_counts():
    rows = [{"length": 5, "count": 10, "exact_match": 1.0}, {"length": 6, "count": 30, "exact_match": 0.5},
            {"length": 9, "count": 5, "exact_match": 0.0}]  # fmt: skip
    bands = length_bands(rows, [(5, 6), (7, 9), (10, 12)])
    assert bands["exact_match_5_6"] == pytest.approx((10 + 15) / 40)
    assert bands["exact_match_7_9"] == 0.0
    assert math.isnan(bands["exact_match_10_12"])


def test_table_is_mean_and_std_over_seeds_and_names_failures():
    results = [
        {"label": "additive", "seed": 0, "status": "FINISHED", "summary": _summary(0.9, [(5, 10, 1.0), (30, 10, 0.8)], 2.0)},
        {"label": "additive", "seed": 1, "status": "FINISHED", "summary": _summary(0.7, [(5, 10, 1.0), (30, 10, 0.4)], 4.0)},
        {"label": "none", "seed": 0, "status": "FINISHED", "summary": _summary(0.2, [(5, 10, 0.4), (30, 10, 0.0)])},
        {"label": "none", "seed": 1, "status": "FAILED", "error": "RuntimeError: boom"},
    ]
    runs = run_rows(results, bands=[(21, 40)])
    assert list(runs["status"]) == ["FINISHED", "FINISHED", "FINISHED", "FAILED"]
    assert math.isnan(runs.loc[3, "exact_match"]) and runs.loc[3, "error"] == "RuntimeError: boom"
    table = comparison_table(runs, ["none", "additive"]).set_index("label")
    assert table.loc["additive", "exact_match_mean"] == pytest.approx(0.8)
    assert table.loc["additive", "exact_match_std"] == pytest.approx(0.1)  # population std over seeds
    assert table.loc["additive", "train_seconds_mean"] == pytest.approx(3.0)
    assert table.loc["additive", "exact_match_21_40_mean"] == pytest.approx(0.6)
    assert table.loc["none", "runs"] == 2 and table.loc["none", "failed"] == 1
    assert table.loc["none", "exact_match_mean"] == pytest.approx(0.2) and table.loc["none", "exact_match_std"] == 0
    assert table.loc["none", "error"] == "RuntimeError: boom" and pd.isna(table.loc["additive", "error"])
    text = format_table(comparison_table(runs, ["none", "additive"]))
    assert "0.800 +- 0.100" in text and "em_21_40" in text
    assert "none: 1 of 2 failed: RuntimeError: boom" in text


def test_a_combination_with_no_finished_run_has_nan_means():
    runs = run_rows([{"label": "x", "seed": 0, "status": "FAILED", "error": "E"}])
    table = comparison_table(runs, ["x"])
    assert math.isnan(table.loc[0, "exact_match_mean"]) and "-" in format_table(table)


def test_accuracy_by_length_pools_seeds_and_shades_unseen_lengths():
    summaries = [_summary(1, [(5, 10, 1.0), (30, 10, 0.8)]), _summary(1, [(5, 30, 0.0), (30, 10, 0.4)])]
    curve = mean_by_length(summaries)
    assert curve[5] == pytest.approx(10 / 40) and curve[30] == pytest.approx(0.6)
    fig = accuracy_by_length({"additive": summaries, "none": []}, train_max_length=20)
    ax = fig.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["additive (2 seeds)"]
    assert any("longer than any training source" in text.get_text() for text in ax.get_legend().get_texts())
    fig.canvas.draw()


def test_learning_curves_and_side_by_side_heatmaps_draw():
    runs = {"additive": [_summary(0.8, [])], "none": [_summary(0.2, [])]}
    fig = learning_curves(runs)
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 2]
    fig.canvas.draw()
    no_weights = {**_summary(0.2, [])["probe"], "weights": None}
    fig = attention_side_by_side([("additive", runs["additive"][0]["probe"]), ("none", no_weights), ("failed", None)])
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("no attention weights" in t for t in texts) and any("no run finished" in t for t in texts)
    assert len(fig.axes[0].images) == 1
    fig.canvas.draw()


def test_attention_measures_are_columns_and_blocks_of_their_own():
    attention = {"test_alignment_within_one": 0.97, "test_alignment_offset_mode": 1.0,
                 "test_alignment_shifted_accuracy": 0.96, "test_alignment_error_rate": 0.97,
                 "test_erasure_flip_top": 0.25, "test_erasure_flip_random": 0.0, "test_erasure_flip_gold": 0.5,
                 "test_erasure_drop_top": 0.3, "test_erasure_drop_random": 0.0, "test_erasure_drop_gold": 0.4}  # fmt: skip
    attends = _summary(0.9, [])
    attends["metrics"].update(attention)
    results = [
        {"label": "additive", "seed": 0, "status": "FINISHED", "summary": attends},
        {"label": "none", "seed": 0, "status": "FINISHED", "summary": _summary(0.2, [])},
    ]
    runs = run_rows(results)
    assert runs.loc[0, "erasure_flip_gold"] == 0.5 and math.isnan(runs.loc[1, "erasure_flip_gold"])
    table = comparison_table(runs, ["additive", "none"]).set_index("label")
    assert table.loc["additive", "alignment_offset_mode_mean"] == 1.0
    text = format_table(comparison_table(runs, ["additive", "none"]))
    alignment, erasure = text.split("\n\nalignment:\n")[1].split("\n\nerasure (teacher-forced):\n")
    assert alignment.splitlines()[0].split() == ["combination", "within_one", "offset_mode", "shifted_accuracy", "error_rate"]
    assert "1.0 +- 0.0" in alignment and "0.960 +- 0.000" in alignment
    assert erasure.splitlines()[0].split()[1:4] == ["flip_top", "flip_random", "flip_gold"]
    assert erasure.splitlines()[2].split() == ["none"] + ["-"] * 6
    # runs without any attention measure (every scorer 'none') show no such block
    assert "alignment:" not in format_table(comparison_table(run_rows(results[1:]), ["none"]))


def test_explanations_are_two_blocks_each_explanations_aer_then_each_ones_comprehensiveness():
    names = ("attention", "saliency", "input_x_gradient", "integrated_gradients")
    summaries = []
    for seed, shift in ((0, 0.0), (1, 0.1)):
        summary = _summary(0.9, [])
        for i, name in enumerate(names):
            summary["metrics"].update({f"test_explain_{name}_error_rate": 0.4 - 0.1 * i + shift,
                                       f"test_explain_{name}_comprehensiveness": 0.2 + 0.05 * i, f"test_explain_{name}_sufficiency": 0.1})  # fmt: skip
        summaries.append({"label": "additive", "seed": seed, "status": "FINISHED", "summary": summary})
    text = format_table(comparison_table(run_rows(summaries), ["additive"]))
    aer = text.split("\n\nexplanations' alignment error rate (AER; lower: nearer the gold alignment):\n")[1].split("\n\n")[0]
    faithful = text.split("\n\nexplanations' comprehensiveness (probability lost when the top source is erased; higher: more faithful):\n")[
        1
    ]
    assert aer.splitlines()[0].split() == ["combination", *names] == faithful.splitlines()[0].split()
    assert aer.splitlines()[1].split()[0] == "additive" and "0.450 +- 0.050" in aer and "0.150 +- 0.050" in aer
    assert "0.350 +- 0.000" in faithful.splitlines()[1] and "sufficiency" not in text  # one measure a block


def test_greedy_metrics_of_beam_runs_are_a_block_of_their_own_and_absent_for_greedy_runs():
    beam = _summary(0.8, [])
    beam["metrics"].update({"test_greedy_exact_match": 0.7, "test_greedy_token_error_rate": 0.12, "test_greedy_sequence_error_rate": 0.3})
    results = [{"label": "additive", "seed": 0, "status": "FINISHED", "summary": beam}]
    text = format_table(comparison_table(run_rows(results), ["additive"]))
    main, greedy = text.split("\n\ngreedy decoding (the runs above used beam search):\n")
    assert "greedy" not in main.splitlines()[0]
    assert greedy.splitlines()[0].split() == ["combination", "em", "token_error_rate", "sequence_error_rate"]
    assert greedy.splitlines()[1].split() == ["additive", "0.700", "+-", "0.000", "0.120", "+-", "0.000", "0.300", "+-", "0.000"]
    greedy_only = [{"label": "additive", "seed": 0, "status": "FINISHED", "summary": _summary(0.8, [])}]
    assert "greedy decoding" not in format_table(comparison_table(run_rows(greedy_only), ["additive"]))
