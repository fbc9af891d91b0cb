"""`attnlab runs` and `attnlab compare` on a store with two tiny trained runs, one trained by the
train flow as `attnlab train` runs it and one through the Python API (attnlab.flows.api.train)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _flowkit import TINY, assert_one_line_error, client_for, point_at, run_flow

from attnlab.flows.cli import app as cli


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, prefect_harness) -> tuple[Path, dict, dict]:
    """(store, summary of the flow's run, summary of the API's run): the API's run is the newer."""
    from attnlab.flows import api
    from attnlab.lab.config import ExperimentConfig

    store = tmp_path_factory.mktemp("runs") / "mlflow"
    by_flow = run_flow(store, **TINY, scorer="dot")
    with pytest.MonkeyPatch.context() as patch:
        point_at(store, patch)
        by_api = api.train(ExperimentConfig(**TINY, scorer="additive"), seed=1)
    return store, by_flow, by_api


def test_the_python_api_logs_what_the_cli_logs(two_runs):
    store, by_flow, by_api = two_runs
    client = client_for(store)
    run, reference = client.get_run(by_api["run_id"]), client.get_run(by_flow["run_id"])
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == "attnlab-date" == by_api["experiment"]
    assert (run.data.params["scorer"], run.data.params["seed"]) == ("additive", "1")
    assert run.data.metrics["test_exact_match"] == by_api["metrics"]["test_exact_match"]
    assert set(reference.data.metrics) <= set(run.data.metrics)  # and champion_score: a champion was there
    artifacts = lambda run_id: {a.path for a in client.list_artifacts(run_id)}  # noqa: E731
    assert artifacts(run.info.run_id) == artifacts(reference.info.run_id) >= {"attention", "config", "tables"}
    version = client.get_model_version("attnlab-date", by_api["model"]["version"])
    assert version.run_id == run.info.run_id


def test_runs_lists_the_experiment_newest_first(capsys, two_runs, monkeypatch):
    store, by_flow, by_api = two_runs
    point_at(store, monkeypatch)
    code, out, err = attnlab(capsys, "runs", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload["experiments"] == ["attnlab-date"]
    rows = {row["run_id"]: row for row in payload["runs"]}
    ids = [row["run_id"] for row in payload["runs"]]
    assert ids.index(by_api["run_id"]) < ids.index(by_flow["run_id"])  # newest first
    row = rows[by_api["run_id"]]
    assert (row["status"], row["task"], row["scorer"], row["encoder"], row["decoder"]) == ("FINISHED", "date", "additive", "gru", "rnn")
    assert row["exact_match"] == by_api["metrics"]["test_exact_match"]
    assert row["epochs"] == by_api["epochs"]

    code, out, _ = attnlab(capsys, "runs", "--limit", "1", "--json")
    assert [row["run_id"] for row in json.loads(out)["runs"]] == [ids[0]]
    code, out, _ = attnlab(capsys, "runs", "--status", "failed,killed")
    assert code == 0 and out.startswith("no runs with status FAILED, KILLED in experiment attnlab-date")
    code, out, _ = attnlab(capsys, "runs", "--task", "date")
    assert code == 0
    assert by_flow["run_id"][:8] in out and "dot/gru/rnn" in out


def test_the_champion_mark_follows_the_alias(capsys, two_runs, monkeypatch):
    store, by_flow, by_api = two_runs
    point_at(store, monkeypatch)
    client = client_for(store)
    holder = client.get_registered_model("attnlab-date").aliases["champion"]
    try:
        for summary in (by_flow, by_api):
            client.set_registered_model_alias("attnlab-date", "champion", summary["model"]["version"])
            code, out, err = attnlab(capsys, "runs", "--json")
            assert code == 0, err
            assert [row["run_id"] for row in json.loads(out)["runs"] if row["champion"]] == [summary["run_id"]]
            _, out, _ = attnlab(capsys, "runs")
            marked = [line for line in out.splitlines() if line.startswith("*  ")]
            assert len(marked) == 1 and summary["run_id"][:8] in marked[0]
    finally:
        client.set_registered_model_alias("attnlab-date", "champion", holder)


def test_stale_runs_are_listed_then_ended_failed(capsys, two_runs, monkeypatch):
    from attnlab.flows.tracking import runs as tracking
    from attnlab.flows.tracking import store as stores
    from attnlab.ops import stale_runs

    store, _, _ = two_runs
    point_at(store, monkeypatch)
    client = client_for(store)
    experiment = tracking.ensure_experiment(client, "left-running", stores.resolve_store())
    exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone, host, now = int(exited.stdout), stale_runs.this_host(), time.time()
    dead = client.create_run(experiment, run_name="dead", tags=stale_runs.owner_tags(host, gone, now)).info.run_id
    alive = client.create_run(experiment, run_name="alive", tags=stale_runs.owner_tags(host, os.getpid(), now)).info.run_id
    try:
        code, out, err = attnlab(capsys, "runs", "--stale", "--json")  # every experiment of the store
        assert code == 0, err
        assert json.loads(out)["stale"] == [
            {"run_id": dead, "name": "dead", "experiment": "left-running", "start_time": json.loads(out)["stale"][0]["start_time"],
             "reason": f"its process {gone} on {host} is gone", "ended": False}
        ]  # fmt: skip
        code, out, _ = attnlab(capsys, "runs", "--stale")
        assert dead[:8] in out and alive[:8] not in out and "attnlab runs --stale --end" in out
        assert client.get_run(dead).info.status == "RUNNING"

        code, out, err = attnlab(capsys, "runs", "--stale", "--end", "--experiment", "left-running")
        assert code == 0, err
        assert dead[:8] in out and out.splitlines()[-1].startswith("ended 1 run(s) FAILED")
        ended = client.get_run(dead)
        assert ended.info.status == "FAILED" and "is gone" in ended.data.tags["attnlab.ended_by"]
        assert client.get_run(alive).info.status == "RUNNING"
        _, out, _ = attnlab(capsys, "runs", "--stale")
        assert out.strip() == "no run is left RUNNING by a process that is gone"
    finally:
        client.set_terminated(alive, "FINISHED")


def test_compare_prints_both_runs_and_plots_a_panel_per_run(capsys, two_runs, monkeypatch, tmp_path):
    from attnlab.viz import run_plots

    store, by_flow, by_api = two_runs
    point_at(store, monkeypatch)
    figures, calls = [], []
    draw = run_plots.attention_by_run
    monkeypatch.setattr(run_plots, "attention_by_run", lambda *a: calls.append(a) or figures.append(draw(*a)) or figures[-1])
    plot = tmp_path / "compare.png"
    first, second = by_flow["run_id"], by_api["run_id"]
    code, out, err = attnlab(capsys, "compare", first[:8], second, "--plot", str(plot), "--input", "25-12-2023", "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert [run["run_id"] for run in payload["runs"]] == [first, second]
    assert payload["params"]["scorer"] == ["dot", "additive"] and payload["params"]["seed"] == ["0", "1"]
    assert payload["metrics"]["test_exact_match"] == [by_flow["metrics"]["test_exact_match"], by_api["metrics"]["test_exact_match"]]
    assert payload["plot"] == str(plot) and plot.read_bytes().startswith(b"\x89PNG")
    assert [p["input"] for p in payload["predictions"]] == ["25-12-2023"]
    assert set(payload["predictions"][0]["outputs"]) == {first, second}
    (figure,) = figures
    assert len([ax for ax in figure.axes if ax.images]) == 2  # one heatmap per run
    assert calls[0][2] is None  # a given input has no known gold alignment

    # Without --input: the first run's plotted test input, drawn with its gold alignment.
    code, out, err = attnlab(capsys, "compare", first, second, "--plot", str(tmp_path / "default.png"), "--json")
    assert code == 0, err
    import mlflow.artifacts

    record = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=first, artifact_path="attention/weights.json")).read_text())[0]
    assert [p["input"] for p in json.loads(out)["predictions"]] == [record["source"]]
    assert record["gold"] and calls[1][2] == [record["gold"]]

    code, out, err = attnlab(capsys, "compare", first, second)
    assert code == 0, err
    assert first[:8] in out and second[:8] in out
    line = next(line for line in out.splitlines() if line.startswith("test_exact_match"))
    assert line.split()[1:] == [f"{by_flow['metrics']['test_exact_match']:.4f}", f"{by_api['metrics']['test_exact_match']:.4f}"]


@pytest.mark.parametrize(
    "args, needles",
    [
        (["compare", "RUN_A", "0123456789abcdef0123456789abcdef"], ["no run '0123456789abcdef0123456789abcdef'", "attnlab runs"]),
        (["compare", "RUN_A", "nosuch", "ffff"], ["no run 'nosuch', 'ffff' in sqlite:///"]),
        (["compare", "RUN_A"], ["give at least two runs to compare, got 1"]),
        (["compare", "RUN_A", "RUN_A", "--input", "25-12-2023"], ["--input chooses what --plot draws"]),
        (["runs", "--experiment", "nosuch"], ["no experiment 'nosuch'", "experiments there:", "attnlab-date"]),
        (["runs", "--status", "done"], ["--status 'done' is not a run status; choose from RUNNING"]),
        (["runs", "--end"], ["--end ends stale runs: give it with --stale"]),
    ],
)
def test_mistakes_are_one_line_and_exit_2(capsys, two_runs, monkeypatch, args, needles):
    store, by_flow, _ = two_runs
    point_at(store, monkeypatch)
    code, out, err = attnlab(capsys, *[by_flow["run_id"] if a == "RUN_A" else a for a in args])
    assert code == 2 and out == ""
    assert_one_line_error(err, *needles)


def test_runs_on_a_store_that_holds_nothing_yet(capsys, empty_store):
    code, out, err = attnlab(capsys, "runs")
    assert code == 2 and out == ""
    assert_one_line_error(err, "no MLflow store at", "attnlab train")
    assert not (empty_store / "mlflow.db").exists()  # listing created nothing


def test_mistakes_in_the_command_line_import_no_heavy_library():
    code = (
        "import sys\n"
        "from attnlab.flows.cli import app as cli\n"
        "codes = [cli.main(a) for a in (['runs', '--status', 'done'], ['runs', '--end'], ['compare', 'abc'])]\n"
        "print(codes, sorted(m for m in ('torch', 'mlflow', 'prefect') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[2, 2, 2] []", done.stderr


@pytest.mark.slow
def test_listing_runs_and_stale_runs_loads_no_torch(two_runs):
    """`attnlab runs` and `attnlab runs --stale` read the store only: a fresh interpreter lists
    both without importing torch (2 s of a 5 s command)."""
    store, by_flow, _ = two_runs
    script = (
        "import json, sys\n"
        "from attnlab.flows.cli.app import main\n"
        "codes = [main(['runs', '--json']), main(['runs', '--stale', '--json'])]\n"
        "print(json.dumps({'codes': codes, 'torch': 'torch' in sys.modules}), file=sys.stderr)\n"
    )
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert json.loads(done.stderr.splitlines()[-1]) == {"codes": [0, 0], "torch": False}, done.stderr[-3000:]
    assert by_flow["run_id"] in done.stdout
