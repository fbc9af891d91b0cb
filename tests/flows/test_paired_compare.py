"""attnlab compare's paired test: runs on the same test split get each measure's difference with
its interval and p-value; runs on different splits, or logged before per-item outcomes, are
refused in one line with --paired (and told in one line without it)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from _flowkit import TINY, assert_one_line_error, client_for, point_at

from attnlab.flows.cli import app as cli

REVERSE = {**TINY, "task": "reverse", "task_options": {"max_length": 10}}


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def runs(tmp_path_factory, prefect_harness) -> tuple[Path, dict[str, str]]:
    """(store, name -> run id): ``dot`` and ``additive`` on the seed-0 split, ``other_split`` on
    seed 1's, ``old``: a seed-0 run whose outcome table is gone, as for a run logged before it."""
    from attnlab.flows.run.train_flow import train_flow
    from attnlab.lab.config import ExperimentConfig

    store = tmp_path_factory.mktemp("paired") / "mlflow"

    def run(**config) -> str:
        # Not registered: the first promotion would draw the registered model's benchmark, which
        # the later runs' data leaves out, so that their test splits could differ from the first's.
        with pytest.MonkeyPatch.context() as patch:
            point_at(store, patch)
            return train_flow(ExperimentConfig(**REVERSE, **config), register_model=False)["run_id"]

    made = {"dot": run(scorer="dot"), "additive": run(scorer="additive"), "other_split": run(scorer="dot", seed=1),
            "old": run(scorer="general")}  # fmt: skip
    artifacts = Path(urlsplit(client_for(store).get_run(made["old"]).info.artifact_uri).path)
    (artifacts / "tables" / "test_outcomes.json").unlink()
    return store, made


@pytest.mark.slow
def test_runs_on_one_test_split_get_a_paired_test(capsys, runs, monkeypatch):
    store, made = runs
    point_at(store, monkeypatch)
    code, out, err = attnlab(capsys, "compare", made["dot"], made["additive"], "--json", "--resamples", "300")
    assert code == 0, err
    (entry,) = json.loads(out)["significance"]
    outcomes = json.loads(Path(client_for(store).download_artifacts(made["dot"], "tables/test_outcomes.json")).read_text())
    assert entry["items"] == len(outcomes["data"]) and entry["resamples"] == 300
    metrics = {m["measure"]: m for m in entry["measures"]}
    assert list(metrics) == ["exact_match", "sequence_error_rate", "token_error_rate"]
    run_metrics = client_for(store).get_run(made["additive"]).data.metrics
    for name, measure in metrics.items():
        assert measure["b"] == pytest.approx(run_metrics[f"test_{name}"])  # the outcomes add up to the run's metrics
        assert measure["low"] <= measure["mean"] <= measure["high"] and 0 < measure["p_value"] <= 1
    code, out, err = attnlab(capsys, "compare", made["dot"], made["additive"])
    assert code == 0, err
    assert f"paired bootstrap, {made['additive'][:8]} against {made['dot'][:8]} (1,000 resamples of {entry['items']} test sources" in out


@pytest.mark.slow
@pytest.mark.parametrize(
    "pair, needle",
    [
        (("dot", "other_split"), "were tested on different test splits"),
        (("dot", "old"), "predates per-item outcomes (no tables/test_outcomes.json)"),
    ],
)
def test_runs_without_a_common_split_are_refused_with_paired_and_told_without(capsys, runs, monkeypatch, pair, needle):
    store, made = runs
    point_at(store, monkeypatch)
    ids = [made[name] for name in pair]
    code, out, err = attnlab(capsys, "compare", *ids, "--paired")
    assert code == 2 and out == ""
    assert_one_line_error(err, needle)
    code, out, err = attnlab(capsys, "compare", *ids, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["significance"] is None and needle in payload["significance_refused"]
    assert payload["metrics"]["test_exact_match"]  # the rest of the comparison is as before
