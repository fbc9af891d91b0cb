"""attnlab sweep: parent and child runs, the comparison table and plots, partial failure, the
Dask runner, concurrent logging, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _flowkit import assert_one_line_error, client_for

from attnlab.flows.cli import app as cli

#: A tiny sweep: 2 scorers x 1 encoder x 2 seeds of reversal, a second or two per run.
TINY_SWEEP = (
    "sweep", "--task", "reverse", "--scorer", "dot,additive", "--encoder", "gru", "--seeds", "0,1",
    "--epochs", "2", "--train-size", "300", "--hidden-size", "16", "-o", "embedding_dim=8",
    "-o", "validation_size=40", "-o", "test_size=60", "-o", "task.max_length=12",
    "-o", "test_task.max_length=16", "-o", "explain_examples=0", "--length-bands", "5-12,13-16", "--json",
)  # fmt: skip
PLOTS = {"plots/accuracy_by_length.png", "plots/learning_curves.png", "plots/attention_by_combination.png"}
PROBE_ONLY = {"attention/example_0.png", "attention/weights.json", "attention/explorer.html"}


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _runs(store: Path, parent_run_id: str):
    client = client_for(store)
    parent = client.get_run(parent_run_id)
    children = client.search_runs([parent.info.experiment_id], f"tags.mlflow.parentRunId = '{parent_run_id}'")
    return client, parent, children


def _artifacts(client, run_id: str, path: str) -> set[str]:
    return {f.path for f in client.list_artifacts(run_id, path)}


def _model_runs(client, runs) -> set[str]:
    """The ids of ``runs`` that logged an MLflow model."""
    logged = client.search_logged_models(list({run.info.experiment_id for run in runs}))
    return {model.source_run_id for model in logged} & {run.info.run_id for run in runs}


def check_linked_sweep(store: Path, summary: dict) -> None:
    """The tiny sweep's parent run holds 4 linked children, the tables and the plots."""
    assert summary["failed"] == 0 and summary["run_count"] == 4 and summary["combinations"] == 2
    client, parent, children = _runs(store, summary["parent_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["attnlab.sweep"] == "parent"
    assert {"attnlab.host", "attnlab.pid"} <= set(parent.data.tags)  # its owner: found stale if that process dies
    assert parent.data.params["grid.scorer"] == "dot,additive" and parent.data.params["grid.seeds"] == "0,1"
    assert len(children) == 4 and {c.info.status for c in children} == {"FINISHED"}
    assert sorted((c.data.tags["scorer"], c.data.params["seed"]) for c in children) == [
        ("additive", "0"),
        ("additive", "1"),
        ("dot", "0"),
        ("dot", "1"),
    ]
    assert {c.info.run_id for c in children} == {row["run_id"] for row in summary["run_table"]}
    assert all(c.data.metrics["val_exact_match"] >= 0 for c in children)  # per-epoch metrics logged
    artifacts = (store / "artifacts").as_uri()
    assert all(run.info.artifact_uri.startswith(artifacts) for run in [parent, *children])
    assert _artifacts(client, parent.info.run_id, "plots") == PLOTS
    assert _artifacts(client, parent.info.run_id, "tables") == {"tables/comparison.json", "tables/runs.json", "tables/significance.json"}
    # Each arm against the best, paired within each seed (reversal draws each seed's own test split).
    marks = summary["significance"]["reverse"]
    assert marks["best"] in ("dot", "additive") and "paired within each seed" in marks["pooling"] and marks["level"] == 0.05
    (other,) = [arm for arm in marks["arms"] if arm["label"] != marks["best"]]
    outcomes = [
        Path(client.download_artifacts(c.info.run_id, "tables/test_outcomes.json"))
        for c in children
        if c.data.tags["scorer"] == other["label"]
    ]
    assert other["note"] is None, other
    assert other["seeds"] == [0, 1] and other["items"] == sum(len(json.loads(path.read_text())["data"]) for path in outcomes)
    assert set(other["measures"]) == {"exact_match", "sequence_error_rate", "token_error_rate"}
    assert f"against the best arm ({marks['best']}): paired bootstrap, 1,000 resamples" in summary["text"]
    # The data splits: once per distinct data set (one per seed) on the parent, named by each run.
    shared = {
        f.path for folder in _artifacts(client, parent.info.run_id, "data") for f in client.list_artifacts(parent.info.run_id, folder)
    }
    assert len(shared) == 2 and all(path.endswith("/splits.csv") for path in shared)
    by_seed = {c.data.params["seed"]: set() for c in children}
    for child in children:
        assert not _artifacts(client, child.info.run_id, "data")
        by_seed[child.data.params["seed"]].add(child.data.tags["attnlab.splits"])
    assert {len(uris) for uris in by_seed.values()} == {1}  # a seed's runs share one file
    assert {uri for uris in by_seed.values() for uri in uris} == {f"runs:/{parent.info.run_id}/{path}" for path in shared}
    # The probe comes from one seed's test split; every run, of either seed, plots it with its gold
    # alignment (reversal: output character i comes from source character L - 1 - i).
    probes = [json.loads(Path(client.download_artifacts(c.info.run_id, "attention/weights.json")).read_text())[0] for c in children]
    assert len({p["source"] for p in probes}) == 1
    assert all(p["gold"] == [[len(p["source"]) - 1 - i] for i in range(len(p["source"]))] for p in probes)
    assert _artifacts(client, parent.info.run_id, "attention") == {"attention/explorer.html"} and summary["explorer"] == [
        "attention/explorer.html"
    ]
    table = summary["table"]
    assert [row["label"] for row in table] == ["dot", "additive"]
    for row in table:
        assert row["runs"] == 2 and row["failed"] == 0
        for name in ("exact_match", "char_accuracy", "alignment_accuracy", "train_seconds", "parameters",
                     "exact_match_5_12", "exact_match_13_16"):  # fmt: skip
            assert f"{name}_mean" in row and f"{name}_std" in row
        assert 0 <= row["char_accuracy_mean"] <= 1 and row["parameters_std"] == 0 and row["parameters_mean"] > 0
    assert parent.data.metrics["dot/char_accuracy_mean"] == pytest.approx(table[0]["char_accuracy_mean"])


@pytest.mark.slow
def test_a_registering_sweep_links_its_runs_and_promotes_by_the_one_rule(capsys, empty_store, tmp_path):
    """Four runs linked to one parent with the tables and plots, registered and promoted two at a
    time: every decision recorded, and the alias ends on the version with the best benchmark
    score (the rule under the lock)."""
    code, out, err = attnlab(capsys, *TINY_SWEEP, "--register", "--example-plots", "--save-plots", str(tmp_path / "figures"))
    assert code == 0, err
    summary = json.loads(out)
    check_linked_sweep(empty_store, summary)
    assert err.count("[") >= 4 and "[4/4]" in err  # one progress line per finished run
    assert sorted(Path(p).name for p in summary["saved_plots"]) == sorted(Path(p).name for p in PLOTS)
    assert all(Path(p).stat().st_size > 10_000 for p in summary["saved_plots"])
    client, _, children = _runs(empty_store, summary["parent_run_id"])
    assert _model_runs(client, children) == {c.info.run_id for c in children}  # --register logs the models
    for child in children:  # --example-plots: the probe and up to 4 test examples (wrong ones first)
        drawn = _artifacts(client, child.info.run_id, "attention") - PROBE_ONLY
        assert drawn and drawn <= {f"attention/example_{i}.png" for i in range(1, 5)}, drawn
    assert sorted(p["version"] for p in summary["promotions"]) == ["1", "2", "3", "4"]
    tags = {v: client.get_model_version("attnlab-reverse", v).tags for v in ("1", "2", "3", "4")}
    assert {t["promotion.command"] for t in tags.values()} == {"sweep"}
    scores = {v: float(t["promotion.challenger_score"]) for v, t in tags.items()}
    holder = str(client.get_registered_model("attnlab-reverse").aliases["champion"])
    assert scores[holder] == max(scores.values())
    assert tags[holder]["promotion.promoted"] == "true"
    benchmark_runs = {t["promotion.benchmark_run_id"] for t in tags.values()}
    assert len(benchmark_runs) == 1  # one benchmark, drawn once, although runs promoted concurrently
    # Drawn before any run started: each run's data leaves it out, so all runs of a seed share one
    # test split (a benchmark drawn by the first promotion would change the later runs' splits).
    drawn = client.get_run(benchmark_runs.pop()).info.start_time
    assert all(drawn < child.info.start_time for child in children)


EXPLODING = """
from attnlab.plugins import Attention

class Exploding(Attention):
    # Keeps the contract when the model is built (the probe runs in eval mode), fails in training.
    def score(self, query, keys):
        if self.training:
            raise RuntimeError("this scorer always fails")
        return query @ keys.transpose(-2, -1)
"""


@pytest.mark.slow
def test_a_failing_combination_is_reported_and_the_others_finish(capsys, empty_store, make_distribution, monkeypatch, tmp_path):
    root = make_distribution("thirdparty-exploding", {"attnlab.scorers": {"exploding": "thirdparty_exploding:Exploding"}},
                             {"thirdparty_exploding.py": EXPLODING})  # fmt: skip
    monkeypatch.setenv("PYTHONPATH", str(root))  # the worker processes see the plugin too
    args = [a if a != "dot,additive" else "dot,exploding" for a in TINY_SWEEP]
    code, out, err = attnlab(capsys, *args)
    assert code == 1, err
    summary = json.loads(out)
    assert summary["failed"] == 2 and summary["run_count"] == 4
    rows = {row["label"]: row for row in summary["table"]}
    assert rows["dot"]["failed"] == 0 and rows["dot"]["exact_match_mean"] is not None
    assert rows["exploding"]["failed"] == 2 and "this scorer always fails" in rows["exploding"]["error"]
    client, parent, children = _runs(empty_store, summary["parent_run_id"])
    assert parent.info.status == "FAILED" and "2 of 4 combinations failed" in parent.data.tags["attnlab.error"]
    statuses = sorted((c.data.tags["scorer"], c.info.status) for c in children)
    assert statuses == [("dot", "FINISHED"), ("dot", "FINISHED"), ("exploding", "FAILED"), ("exploding", "FAILED")]
    # Each run draws the probe's heatmap only (--example-plots adds those of 4 test examples).
    finished = [c for c in children if c.info.status == "FINISHED"]
    assert all(_artifacts(client, c.info.run_id, "attention") == PROBE_ONLY for c in finished)
    assert _artifacts(client, parent.info.run_id, "plots") == PLOTS  # reported all the same
    assert "FAILED: RuntimeError: this scorer always fails" in err
    # A sweep compares: its runs log no model unless asked (--log-models, --register), and
    # comparing their attention says so in one line instead of failing inside MLflow.
    assert not _model_runs(client, children)
    compare_code, _, compare_err = attnlab(
        capsys, "compare", finished[0].info.run_id, finished[1].info.run_id, "--plot", str(tmp_path / "c.png")
    )
    assert compare_code == 2
    assert_one_line_error(compare_err, "no model at runs:/", "--log-models")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--scorer", "dot,,additive"], ["--scorer", "without empty entries"]),
        (["--scorer", ""], ["--scorer", "without empty entries"]),
        (["--scorer", "dot,cosine"], ["unknown scorer 'cosine'", "additive", "multihead"]),
        (["--encoder", "gru,gru"], ["--encoder", "repeated"]),
        (["--seeds", "0,one"], ["--seeds", "'one' is not an integer"]),
        (["--max-parallel", "0"], ["--max-parallel 0", "at least 1"]),
        (["--runner", "spark"], ["--runner 'spark'", "process, thread, dask"]),
        (["--dask-address", "tcp://127.0.0.1:9"], ["--dask-address needs --runner dask"]),
        (["--runner", "dask", "--dask-address", "127.0.0.1:8786"], ["expected tcp://HOST:PORT"]),
        (["--runner", "dask", "--dask-address", "tcp://127.0.0.1:9"], ["cannot reach the Dask scheduler", "refused"]),
        (["--scorer", "multihead", "-o", "scorer.heads=3"], ["multihead", "heads"]),
        (["--length-bands", "40-21"], ["--length-bands", "'40-21'"]),
        (["--save-plots", "/proc/attnlab-plots"], ["--save-plots", "/proc/attnlab-plots"]),
        (["--task", "reverse,date", "--model-name", "mine"], ["--model-name 'mine' names one model", "several tasks"]),
        (["--model-name", "../up"], ["model_name", "use only letters"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_anything_starts(capsys, empty_store, args, needles):
    code, out, err = attnlab(capsys, "sweep", "--task", "reverse", *args)
    assert code == 2
    assert_one_line_error(err, *needles)
    assert not (empty_store / "mlflow.db").exists()  # nothing was started
