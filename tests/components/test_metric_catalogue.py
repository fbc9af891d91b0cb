"""The metric catalogue: a metric declared in one place shows in every output that lists it, and
what the outputs show is what the catalogue says."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from attnlab.evaluation import arm_significance
from attnlab.evaluation.compare import comparison_table, format_table, run_rows
from attnlab.evaluation.explanation_measures import explanation_table
from attnlab.evaluation.metrics import evaluate, with_explanations
from attnlab.evaluation.run_compare import comparison, format_comparison
from attnlab.evaluation.significance import Outcomes, paired_bootstrap
from attnlab.lab import metric_catalogue
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.metric_catalogue import (
    CATALOGUE,
    COMPARE,
    GROUPS,
    HIGHER,
    LOWER,
    PLACES,
    SUMMARY,
    SWEEP,
    at,
    metric,
    metric_entry,
    shown_in,
)
from attnlab.lab.summaries import format_summary
from attnlab.model.assembly import build_model, build_task
from attnlab.ops.run_listing import format_runs, run_row

#: A metric no evaluation computes, written with two decimals everywhere so its cells are its own.
FAKE = metric_entry("fake_faithfulness", HIGHER, at(SUMMARY, COMPARE, sweep="faith"), fmt=".2f", short_fmt=".2f")
METRICS = {"test_exact_match": 0.5, "test_char_accuracy": 0.75, "test_fake_faithfulness": 0.125}


def train_summary() -> dict:
    model = {"name": "attnlab-date", "version": "1", "uri": "models:/attnlab-date/1", "champion": True, "champion_version": "1"}
    return {
        "run_id": "a" * 32, "experiment": "attnlab-date", "epochs": 2, "train_seconds": 1.5, "parameters": 100,
        "stopped_early": False, "metrics": METRICS, "ui": "http://ui", "model": {**model, "decision": {"reason": "first"}},
    }  # fmt: skip


def outputs() -> tuple[str, str, str]:
    """The train summary's ``test:`` line, ``attnlab compare``'s text and the sweep's table, of
    runs that logged :data:`METRICS`."""
    summary = train_summary()
    test_line = next(line for line in format_summary(summary).splitlines() if line.startswith("test:"))
    record = {"run_id": "a" * 32, "run_name": "r", "status": "FINISHED", "start_time": 0, "tags": {}, "params": {}, "metrics": METRICS}
    compared = format_comparison(comparison([record, {**record, "run_id": "b" * 32}]))
    rows = run_rows([{"label": "dot", "seed": seed, "status": "FINISHED", "summary": summary} for seed in (0, 1)])
    return test_line, compared, format_table(comparison_table(rows, ["dot"]))


def test_a_metric_added_to_the_catalogue_shows_in_the_summary_compare_and_the_sweep_table(monkeypatch):
    before = outputs()
    assert not any("0.12" in text for text in before)  # not shown before it is declared
    monkeypatch.setattr(metric_catalogue, "CATALOGUE", (*CATALOGUE, FAKE))
    test_line, compared, table = outputs()
    assert test_line == "test:  exact_match 0.5000  char_accuracy 0.7500  fake_faithfulness 0.12"
    assert [line.split() for line in compared.splitlines() if "fake" in line] == [["test_fake_faithfulness", "0.12", "0.12"]]
    header, row = table.splitlines()
    assert header.split()[-1] == "faith" and row.endswith("0.12 +- 0.00")
    # the places it was not declared for do not show it
    assert "fake" not in format_runs([run_row({**train_summary(), "status": "FINISHED", "start_time": 0, "metrics": METRICS})])


def test_a_metric_in_a_group_of_its_own_gets_its_summary_line_and_sweep_block(monkeypatch):
    monkeypatch.setitem(GROUPS, "attribution", "attribution (gradients)")
    grouped = metric_entry("attribution_agreement", HIGHER, at(summary="agreement", sweep="agreement"), "attribution")
    monkeypatch.setattr(metric_catalogue, "CATALOGUE", (*CATALOGUE, grouped))
    summary = {**train_summary(), "metrics": {**METRICS, "test_attribution_agreement": 0.5}}
    assert "attribution: agreement 0.5000" in format_summary(summary).splitlines()
    rows = run_rows([{"label": "dot", "seed": 0, "status": "FINISHED", "summary": summary}])
    assert "attribution (gradients):\ncombination      agreement" in format_table(comparison_table(rows, ["dot"]))


def test_every_metric_the_evaluation_computes_is_declared_and_nothing_else():
    """A tiny untrained model evaluated by beam search (greedy metrics too) on a task with
    alignments: each metric it logs as ``test_<name>`` has its catalogue entry, and each test
    metric of the catalogue is one the evaluation computes (a misspelt entry would show nothing)."""
    config = ExperimentConfig(hidden_size=8, embedding_dim=8)
    task = build_task(config)
    torch.manual_seed(0)
    model, examples = build_model(config, task), task.generate(8, 0)
    evaluation = with_explanations(evaluate(model, examples, beam_size=2), explanation_table(model, examples, steps=2))
    computed = {f"test_{name}" for name in evaluation.metrics}
    declared = [m.key for m in CATALOGUE if m.test]
    assert len(set(declared)) == len(declared), "a metric is declared twice"
    assert computed == set(declared)
    for entry in CATALOGUE:
        assert set(entry.shown) <= set(PLACES) and (not entry.group or entry.group in GROUPS), entry


def test_declaring_a_place_or_group_that_does_not_exist_is_refused():
    with pytest.raises(ValueError, match="unknown place.*summry"):
        at("summry")
    with pytest.raises(ValueError, match="unknown group 'attribution'"):
        metric_entry("x", None, at(SUMMARY), "attribution")
    with pytest.raises(KeyError, match="'nope' is not in the catalogue"):
        metric("nope")


def test_the_significance_table_and_direction_read_the_catalogue(monkeypatch):
    assert arm_significance.headings() == {"exact_match": "em", "sequence_error_rate": "wer", "token_error_rate": "per"}
    assert [m.name for m in shown_in(SWEEP, "greedy")] == ["greedy_exact_match", "greedy_token_error_rate", "greedy_sequence_error_rate"]
    a = Outcomes(*(np.array(v, dtype=float) for v in ([0] * 40, [1] * 40, [2] * 40, [4] * 40)))
    b = Outcomes(*(np.array(v, dtype=float) for v in ([1] * 40, [1] * 40, [0] * 40, [4] * 40)))
    assert [d.better for d in paired_bootstrap(a, b, 200)] == ["b", "b", "b"]
    flipped = tuple(replace(m, better=LOWER) if m.name == "exact_match" else m for m in CATALOGUE)
    monkeypatch.setattr(metric_catalogue, "CATALOGUE", flipped)
    assert [d.better for d in paired_bootstrap(a, b, 200)] == ["a", "b", "b"]
