"""The tables of `attnlab runs` and `attnlab compare`, and the compare figure, on plain run records."""

from __future__ import annotations

import pytest

from attnlab.evaluation.run_compare import comparison, differing_params, format_comparison
from attnlab.model.predict import Prediction
from attnlab.ops.run_listing import check_statuses, format_runs, format_stale, run_row, stale_row
from attnlab.viz.run_plots import attention_by_run

START = 1_764_565_200_000  # 2025-12-01 05:00:00 UTC, in ms


def record(run_id: str, scorer: str, seed: str, em: float | None, **extra) -> dict:
    metrics = {"test_exact_match": em, "test_alignment_accuracy": 0.5, "epochs_trained": 2.0, "test_exact_match_by_length": 0.1}
    return {
        "run_id": run_id,
        "run_name": f"{scorer}-gru-rnn-seed{seed}",
        "experiment": "attnlab-date",
        "status": "FINISHED",
        "start_time": START,
        "tags": {"task": "date", "scorer": scorer, "encoder": "gru", "decoder": "rnn", "attnlab.model_name": "attnlab-date"},
        "params": {"task": "date", "scorer": scorer, "seed": seed, "hidden_size": "16"},
        "metrics": {k: v for k, v in metrics.items() if v is not None},
        **extra,
    }


A = record("a" * 32, "dot", "0", 0.25)
B = record("b" * 32, "additive", "1", 1.0)


def test_run_row_takes_plugins_metrics_and_champion_from_the_record():
    row = run_row(B, champion_runs={"b" * 32})
    assert row == {
        "run_id": "b" * 32, "name": "additive-gru-rnn-seed1", "experiment": "attnlab-date", "status": "FINISHED", "skipped": None,
        "start_time": "2025-12-01 05:00:00", "task": "date", "scorer": "additive", "encoder": "gru", "decoder": "rnn",
        "model": "attnlab-date", "data": None, "exact_match": 1.0, "token_error_rate": None, "sequence_error_rate": None, "alignment": 0.5, "epochs": 2,
        "champion": True, "champion_unusable": None,
    }  # fmt: skip
    rates = run_row(record("d" * 32, "dot", "0", 0.5, metrics={"test_token_error_rate": 0.125, "test_sequence_error_rate": 0.5}))
    assert (rates["token_error_rate"], rates["sequence_error_rate"]) == (0.125, 0.5)
    assert run_row(A, champion_runs={"b" * 32})["champion"] is False
    bare = run_row({"run_id": "c" * 32, "status": "RUNNING", "start_time": None, "tags": {}, "params": {}, "metrics": {}})
    assert (bare["exact_match"], bare["epochs"], bare["start_time"], bare["scorer"]) == (None, None, "", None)


def test_format_runs_marks_only_the_champions_run():
    text = format_runs([run_row(A, {"b" * 32}), run_row(B, {"b" * 32})])
    header, first, second, note = text.splitlines()
    shown = "run name status started (UTC) task model scorer/encoder/decoder exact_match token_err seq_err alignment epochs data"
    assert header.split() == shown.split()
    assert first.split()[:2] == ["aaaaaaaa", "dot-gru-rnn-seed0"] and "0.2500" in first
    assert second.split()[:3] == ["*", "bbbbbbbb", "additive-gru-rnn-seed1"] and "additive/gru/rnn" in second
    assert note.startswith("* champion")
    assert "champion" not in format_runs([run_row(A), run_row(B)])
    assert format_runs([]) == ""


def test_a_skipped_retrain_shows_skipped_and_two_versions_of_a_file_differ_by_their_digest():
    digests = ("4f2a9c1d" + "0" * 56, "b7e31f02" + "0" * 56)
    pairs = {"task": "pairs", "attnlab.model_name": "attnlab-pairs-lexicon"}
    runs = [
        record("e" * 32, "additive", "0", 0.5, tags={**pairs, "attnlab.data_version": digests[0]}),
        record("f" * 32, "additive", "0", 0.5, tags={**pairs, "attnlab.data_version": digests[1]}),
        {**record("9" * 32, "-", "-", None, metrics={}), "run_name": "retrain-pairs",
         "tags": {**pairs, "attnlab.retrain.skipped": "data unchanged: ..."}},
    ]  # fmt: skip
    rows = [run_row(run) for run in runs]
    assert [row["skipped"] for row in rows] == [None, None, "data unchanged: ..."] and rows[2]["status"] == "FINISHED"
    header, first, second, skipped, note = format_runs(rows).splitlines()
    assert first.split()[-1] == "4f2a9c1d" and second.split()[-1] == "b7e31f02"
    assert "attnlab-pairs-lexicon" in first and skipped.split()[2] == "SKIPPED" and skipped.split()[-1] == "-"
    assert note.startswith("SKIPPED: a scheduled retrain that did not train")


def test_format_runs_marks_an_unusable_champion_and_says_why():
    why = "its pyfunc_model.py (sha256 d131361762e7) differs from the one attnlab installs"
    rows = [run_row(A, {"b" * 32: why}), run_row(B, {"b" * 32: why})]
    assert rows[1]["champion"] and rows[1]["champion_unusable"] == why and rows[0]["champion_unusable"] is None
    header, first, second, note = format_runs(rows).splitlines()
    assert second.split()[:2] == ["!", "bbbbbbbb"] and not first.startswith(("!", "*"))
    assert note == f"! champion, unusable (found by the last promotion): {why}"
    usable = format_runs([run_row(B, {"b" * 32: None})]).splitlines()
    assert usable[1].split()[0] == "*" and usable[-1].startswith("* champion")


def test_check_statuses():
    assert check_statuses(["failed,killed", "FAILED"]) == ("FAILED", "KILLED")
    with pytest.raises(ValueError, match=r"--status 'done' is not a run status; choose from RUNNING, SCHEDULED, FINISHED"):
        check_statuses(["done"])


def test_stale_table_says_what_was_done():
    rows = [stale_row(A, "its process 4242 on here is gone", ended=False)]
    text = format_stale(rows, "attnlab runs --stale --end --task date")
    assert "aaaaaaaa" in text and "its process 4242 on here is gone" in text
    assert text.splitlines()[-1].endswith("end them FAILED with: attnlab runs --stale --end --task date")
    ended = format_stale([stale_row(A, "gone", ended=True)])
    assert ended.splitlines()[-1].startswith("ended 1 run(s) FAILED")
    assert format_stale([]) == "no run is left RUNNING by a process that is gone"


def test_comparison_keeps_differing_params_and_test_metrics():
    assert differing_params([A, B]) == {"scorer": ["dot", "additive"], "seed": ["0", "1"]}
    same = comparison([A, A])
    assert same["params"] == {}
    compared = comparison([A, B])
    assert [r["run_id"] for r in compared["runs"]] == ["a" * 32, "b" * 32]
    assert compared["metrics"] == {
        "test_alignment_accuracy": [0.5, 0.5],
        "test_exact_match": [0.25, 1.0],
        "epochs_trained": [2.0, 2.0],
    }  # the per-length series is not a single number
    text = format_comparison(compared)
    assert "params that differ" in text and "test_exact_match" in text
    metric_line = next(line for line in text.splitlines() if line.startswith("test_exact_match"))
    assert metric_line.split() == ["test_exact_match", "0.2500", "1.0000"]
    assert "params: the same in every run" in format_comparison(same)


def test_two_versions_of_one_file_differ_by_their_data_digest_in_a_comparison():
    old = record("e" * 32, "additive", "0", 0.5, tags={"task": "pairs", "attnlab.data_version": "4f2a9c1d" + "0" * 56})
    new = record("f" * 32, "additive", "0", 0.5, tags={"task": "pairs", "attnlab.data_version": "b7e31f02" + "0" * 56})
    compared = comparison([old, new])
    assert [run["data"][:8] for run in compared["runs"]] == ["4f2a9c1d", "b7e31f02"]
    first, second = format_comparison(compared).splitlines()[:2]
    assert first.endswith("data 4f2a9c1d") and second.endswith("data b7e31f02")
    assert "data" not in format_comparison(comparison([A, B])).splitlines()[0]  # a generated task has no digest


def test_a_run_missing_a_metric_shows_a_dash():
    lacking = record("c" * 32, "none", "0", None)
    compared = comparison([A, lacking])
    assert compared["metrics"]["test_exact_match"] == [0.25, None]
    line = next(line for line in format_comparison(compared).splitlines() if line.startswith("test_exact_match"))
    assert line.split() == ["test_exact_match", "0.2500", "-"]


def _prediction(source: str, output: str, attends: bool = True) -> Prediction:
    weights = [[1.0 / len(source)] * len(source) for _ in output] if attends else None
    return Prediction(source, output, list(source), list(output), weights, None)


def test_figure_has_a_heatmap_per_run_and_input():
    grid = [[_prediction("12-03", "03月12日"), _prediction("12-03", "x"), _prediction("12-03", "y", attends=False)],
            [_prediction("01-02", "02月01日"), _prediction("01-02", "z"), _prediction("01-02", "w", attends=False)]]  # fmt: skip
    fig = attention_by_run(["run a", "run b", "run c"], grid)
    heatmaps = [ax for ax in fig.axes if ax.images]
    assert len(heatmaps) == 4  # 2 inputs x 2 runs that attend; the third run gets a note
    assert heatmaps[0].get_title().startswith("run a\n12-03 -> 03月12日")
    notes = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("no attention weights" in note and "run c" in note for note in notes)
    with pytest.raises(ValueError, match="one prediction per run"):
        attention_by_run(["run a", "run b"], [[_prediction("1", "1")]])
