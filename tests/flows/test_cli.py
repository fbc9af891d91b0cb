"""The attnlab CLI: each subcommand, the --json shapes, and every bad input as one line + exit 2."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
import torch
import yaml
from _flowkit import KNOWN_DATES, TINY, assert_one_line_error, client_for, point_at, terminal_popen

from attnlab.flows.cli import app as cli
from attnlab.flows.cli import support as cli_support
from attnlab.flows.run import steps as tasks
from attnlab.flows.services import servers
from attnlab.flows.tracking.runs import config_params

SUMMARY_KEYS = {
    "run_id", "experiment", "tracking_uri", "status", "config", "epochs", "stopped_early", "train_seconds",
    "final_epoch", "metrics", "model", "prefect_flow_run_id", "ui", "timings", "parameters", "history",
    "by_length", "probe", "selection",
}  # fmt: skip
MODEL_KEYS = {"name", "version", "uri", "champion", "champion_version", "previous_champion", "decision", "benchmark"}
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    """Run the CLI in-process; (exit status, stdout, stderr)."""
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --------------------------------------------------------------------------- train


@pytest.mark.slow
def test_train_json_summary_and_config_file_under_flags(capsys, empty_store, tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump({**TINY, "epochs": 3, "scorer_options": {}}))
    code, out, err = attnlab(capsys, "train", "--config", str(config), "--epochs", "1", "-o", "seed=7", "--json")
    assert code == 0, err
    assert len(out.strip().splitlines()) == 1
    summary = json.loads(out)
    assert set(summary) == SUMMARY_KEYS and set(summary["model"]) == MODEL_KEYS
    assert summary["status"] == "FINISHED" and summary["epochs"] == 1
    assert summary["model"]["name"] == "attnlab-date" and summary["model"]["champion"] is True
    assert summary["ui"].startswith("attnlab ui")
    assert {"imports", "check", "flow", "total", "steps"} <= set(summary["timings"])
    params = client_for(empty_store).get_run(summary["run_id"]).data.params
    assert params["epochs"] == "1" and params["seed"] == "7" and params["hidden_size"] == "16"  # flag > -o > YAML
    # The tests' own passive policy (tests/_testrun.py), kept: attnlab adds no spin count over it.
    assert params["omp_wait_policy"] == "PASSIVE" and params["gomp_spincount"] == "(OpenMP's default)"
    assert 1 <= int(params["torch_threads"]) <= (os.cpu_count() or 1)
    assert "epoch   1/1" in err  # one progress line per epoch
    assert "INFO" not in err and "Traceback" not in err


@pytest.mark.slow
def test_train_text_summary_ends_with_how_to_open_the_ui(capsys, empty_store):
    args = [f"-o{key}={value}" for key, value in {**TINY, "explain_examples": 30}.items()]
    code, out, err = attnlab(capsys, "train", *args, "--scorer", "additive", "--experiment", "cli-text")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("run ") and "experiment cli-text" in lines[0]
    assert lines[1].startswith("test:  exact_match")
    assert lines[2].startswith("alignment: within one ") and lines[3].startswith("erasure (50 test examples): flip rate top ")
    assert lines[4].split() == "explanations (30 test examples) attention saliency input_x_gradient integrated_gradients".split()
    assert [line.split("  ")[1] for line in lines[5:12]] == ["error rate (AER)", "within one", "shifted by the mode", "comprehensiveness",
                                                           "sufficiency", "flip rate (top 1 erased)", "Kendall's tau with attention"]  # fmt: skip
    assert lines[12] == "model: attnlab-date version 1 (models:/attnlab-date/1)"
    assert lines[13].startswith("promotion on the benchmark (500 examples, run ")
    assert lines[13].endswith("new champion: first champion: no model held the alias (challenger 0.0000)")
    assert lines[-1].startswith("open the MLflow UI: attnlab ui")
    run = client_for(empty_store).get_run(lines[0].split()[1])
    assert run.info.experiment_id == client_for(empty_store).get_experiment_by_name("cli-text").experiment_id
    assert run.data.tags["scorer"] == "additive"


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--scorer", "cosine"], ["unknown scorer 'cosine'; available: additive, dot, general"]),
        (["--encoder", "rnn"], ["unknown encoder 'rnn'; available:"]),
        (["--task", "dates"], ["unknown task 'dates'; available: cmudict, date, date-formats, pairs, reverse"]),
        (["--epochs", "0"], ["bad value '0' for epochs (from --epochs)", "greater than 0"]),
        (["--device", "tpu"], ["bad value 'tpu' for device (from --device)", "'auto', 'cpu' or 'cuda[:N]'"]),
        (["--epochs", "abc"], ["bad value 'abc' for epochs (from --epochs)", "valid integer"]),
        (["--epochs"], ["Option '--epochs' requires an argument"]),
        (["--scorer", "multihead", "-o", "scorer.heads=3"], ["heads=3 does not divide model_dim=128"]),
        (["-o", "scorer.temperature=2"], ["unknown option(s) temperature"]),
        (["-o", "learning_rate=fast"], ["bad value 'fast' for learning_rate (from -o learning_rate=fast)"]),
        (["-o", "epoch=3"], ["unknown config key 'epoch'", "allowed keys: task, task_options"]),
        (["-o", "nonsense"], ["expected KEY=VALUE"]),
        (["--nope"], ["No such option: --nope"]),
        (["-o", "task.min_year=2000", "-o", "task.max_year=2000"], ["has only 366 distinct values"]),
        (["-o", "task.min_year=zero"], ["min_year must be an integer"]),
        (["--hidden-size", "1000000"], ["bad value '1000000' for hidden_size (from --hidden-size)", "less than or equal to 2048"]),
        (["--learning-rate", "inf"], ["bad value 'inf' for learning_rate (from --learning-rate)", "finite number"]),
        (["--learning-rate", "1e999"], ["bad value '1e999' for learning_rate", "finite number"]),
        (["--seed", "100000000000000000000"], ["for seed (from --seed)", "less than 4294967296"]),
        (["--task", "reverse", "-o", "task.max_length=1000000000"], ["max_length must be at most 512, got 1000000000"]),
        (["--experiment", "../../escape_exp"], ["--experiment '../../escape_exp'", "letters, digits"]),
        (["-o", "dropout=1"], ["bad value 1 for dropout (from -o dropout=1)", "must be a number in [0, 1)"]),
        (["-o", "label_smoothing=-0.1"], ["bad value -0.1 for label_smoothing (from -o label_smoothing=-0.1)", "[0, 1)"]),
        (["-o", "weight_decay=-1"], ["bad value -1 for weight_decay", "greater than or equal to 0"]),
        (["-o", "warmup_steps=-5"], ["bad value -5 for warmup_steps", "greater than or equal to 0"]),
        (["-o", "lr_schedule=linear"], ["bad value 'linear' for lr_schedule", "'constant', 'cosine' or 'inverse_sqrt'"]),
        (["-o", "checkpoint=first"], ["bad value 'first' for checkpoint", "'last' or 'best'"]),
        (["--epochs", "3", "-o", "average_last=5"], ["bad value 5 for average_last (from -o average_last=5)", "at most epochs (3)"]),
        (["-o", "checkpoint=best", "-o", "average_last=2"], ["bad value 2 for average_last", "goes with checkpoint 'last' only"]),
        (["--encoder", "transformer", "-o", "dropout=0.2", "-o", "encoder.dropout=2"], ["dropout must be a number in [0, 1), got 2"]),
        pytest.param(["--device", "cuda"], ["device 'cuda' is not available: no CUDA device here"], marks=NO_CUDA),
    ],
)
def test_train_bad_input_is_one_line_and_exit_2(capsys, empty_store, args, needles):
    code, out, err = attnlab(capsys, "train", *args)
    assert code == 2 and out == ""
    assert_one_line_error(err, *needles)
    assert not empty_store.exists()  # refused before anything was created


@pytest.mark.parametrize(
    "text, needles",
    [
        ("epoch: 3\n", ["unknown config key 'epoch' (from config file", "allowed keys: task"]),
        ("epochs: many\n", ["bad value 'many' for epochs (from config file", "valid integer"]),
        ("scorer_options: [1, 2]\n", ["bad value [1, 2] for scorer_options", "valid dictionary"]),
        ("epochs: [1\n", ["is not valid YAML", "line 2"]),
        ("- epochs\n", ["must hold a mapping of config keys", "not a list"]),
    ],
)
def test_bad_yaml_config_is_one_line_and_exit_2(capsys, empty_store, tmp_path, text, needles):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    code, _, err = attnlab(capsys, "train", "--config", str(config))
    assert code == 2
    assert_one_line_error(err, *needles)


def test_missing_config_file(capsys, empty_store, tmp_path):
    code, _, err = attnlab(capsys, "train", "--config", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert_one_line_error(err, "nope.yaml' does not exist")


def test_unreachable_tracking_server_is_reported_before_training(capsys, monkeypatch):
    port = _free_port()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(tasks, "train_model", lambda *a, **k: pytest.fail("training started"))
    code, _, err = attnlab(capsys, "train")
    assert code == 2
    assert_one_line_error(err, f"cannot reach the MLflow tracking store http://127.0.0.1:{port}", "connection refused")
    assert " tries in " not in err  # an absent server is reported at its first refusal, not retried


def test_config_merging_order(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("epochs: 5\nseed: 1\nscorer_options: {heads: 2}\nscorer: multihead\n")
    built = cli_support.build_config(config, {"epochs": 3, "seed": None}, ["scorer.heads=8", "hidden_size=32", "test_task.max_year=2040"])
    assert (built.epochs, built.seed, built.scorer, built.scorer_options, built.hidden_size) == (3, 1, "multihead", {"heads": 8}, 32)
    assert built.test_task_options == {"max_year": 2040}
    assert config_params(built)["scorer_options"] == '{"heads": 8}'


# --------------------------------------------------------------------------- predict


@pytest.mark.slow
def test_predict_with_the_champion(capsys, learned_store, monkeypatch, tmp_path):
    store, summary = learned_store
    point_at(store, monkeypatch)
    code, out, err = attnlab(capsys, "predict", *KNOWN_DATES)
    assert code == 0, err
    assert out.splitlines() == [f"{source} -> {target}" for source, target in KNOWN_DATES.items()]
    plot = tmp_path / "att.png"
    code, out, err = attnlab(capsys, "predict", "25-12-2023", "--plot", str(plot), "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert payload == {
        "model": "models:/attnlab-date@champion",
        "predictions": [{"source": "25-12-2023", "prediction": "2023年12月25日"}],
        "plots": [str(plot)],
    }
    assert plot.read_bytes().startswith(b"\x89PNG")
    version = summary["model"]["version"]
    code, out, _ = attnlab(capsys, "predict", "01-01-2000", "--model", f"models:/attnlab-date/{version}")
    assert code == 0 and out.strip() == "01-01-2000 -> 2000年01月01日"


@pytest.mark.slow
def test_predict_from_a_bundle_folder_plots_several_inputs(capsys, tmp_path):
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(scorer="multihead", hidden_size=16, embedding_dim=8)
    bundle = save_bundle(tmp_path / "bundle", config, build_model(config, build_task(config)))
    code, out, err = attnlab(capsys, "predict", "01-02-2003", "04-05-2006", "--model", str(bundle), "--plot", str(tmp_path / "p.png"))
    assert code == 0, err
    assert len(out.splitlines()) == 2
    assert {p.name for p in tmp_path.glob("*.png")} == {"p-1.png", "p-1-heads.png", "p-2.png", "p-2-heads.png"}


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, needles",
    [
        (["2023/12/25"], ["'2023/12/25' has character(s) '/' outside this task's alphabet"]),
        ([""], ["the source is empty"]),
        (
            ["25-12-2023", "--task", "reverse"],
            ["no registered model 'attnlab-reverse' with a 'champion' yet", "attnlab train --task reverse"],
        ),
        (["25-12-2023", "--model", "models:/nope/1"], ["no model at models:/nope/1"]),
    ],
)
def test_predict_bad_input_is_one_line_and_exit_2(capsys, learned_store, monkeypatch, args, needles):
    point_at(learned_store[0], monkeypatch)
    code, out, err = attnlab(capsys, "predict", *args)
    assert code == 2 and out == ""
    assert_one_line_error(err, *needles)


def test_predict_without_any_registered_model(capsys, empty_store):
    code, _, err = attnlab(capsys, "predict", "25-12-2023")
    assert code == 2
    assert_one_line_error(err, "no registered model 'attnlab-date' yet", "attnlab train --task date")


# --------------------------------------------------------------------------- plugins


def test_plugins_lists_every_group_and_marks_broken_ones(capsys, make_distribution):
    make_distribution(
        "thirdparty-broken",
        {"attnlab.scorers": {"wobbly": "thirdparty_wobbly:Wobbly"}},
        {"thirdparty_wobbly.py": "import not_installed_anywhere\n"},
    )
    code, out, _ = attnlab(capsys, "plugins")
    assert code == 0
    for group in ("scorers", "encoders", "decoders", "tasks"):
        assert f"{group} (entry-point group attnlab.{group})" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "attnlab 0.1.0" in lines["scaled_dot"] and "attnlab.plugins.builtin.scorers:ScaledDotAttention" in lines["scaled_dot"]
    assert "thirdparty-broken 1.0" in lines["wobbly"] and "BROKEN:" in lines["wobbly"]
    assert "ModuleNotFoundError" in lines["wobbly"]
    code, out, _ = attnlab(capsys, "plugins", "--json")
    table = json.loads(out)
    assert set(table) == {"scorers", "encoders", "decoders", "tasks"}
    wobbly = next(row for row in table["scorers"] if row["name"] == "wobbly")
    assert wobbly["ok"] is False and "not_installed_anywhere" in wobbly["error"]
    assert all(row["ok"] for row in table["tasks"])


# --------------------------------------------------------------------------- ui


def test_ui_command_serves_the_embedded_store_on_loopback(empty_store):
    from attnlab.flows.services.servers import mlflow_ui_command
    from attnlab.flows.tracking.store import resolve_store

    command = mlflow_ui_command(resolve_store(), "127.0.0.1", 5123)
    assert command[1:4] == ["-m", "mlflow", "server"]
    assert command[command.index("--backend-store-uri") + 1] == f"sqlite:///{empty_store / 'mlflow.db'}"
    assert command[command.index("--default-artifact-root") + 1] == (empty_store / "artifacts").as_uri()
    assert command[command.index("--host") + 1] == "127.0.0.1" and command[command.index("--port") + 1] == "5123"


def test_ui_refuses_a_busy_port(capsys, empty_store):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = attnlab(capsys, "ui", "--port", str(port))
    assert code == 2
    assert_one_line_error(err, f"cannot listen on 127.0.0.1:{port}", "--port")


def test_ui_with_a_tracking_server_just_points_at_it(capsys, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    code, out, _ = attnlab(capsys, "ui")
    assert code == 0 and "http://127.0.0.1:5999" in out


def _console_script() -> str:
    return str(Path(sys.executable).with_name("attnlab"))


@pytest.mark.slow
def test_ui_serves_runs_and_heatmaps(learned_store):
    store, summary = learned_store
    port = _free_port()
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(store)}
    env.pop("MLFLOW_TRACKING_URI", None)
    process = subprocess.Popen(
        [_console_script(), "ui", "--port", str(port)], env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600  # a hang guard: the event is /health answering
        while not servers.healthy(f"{base}/health"):
            assert process.poll() is None, process.stdout.read().decode()
            assert time.monotonic() < deadline, "the UI did not come up in 600 s"
            time.sleep(0.5)
        started = [" ".join(child.cmdline()) for child in psutil.Process(process.pid).children(recursive=True)]
        assert not [c for c in started if "huey" in c or "_job_runner" in c], started  # without MLflow's job runner
        with urllib.request.urlopen(f"{base}/ajax-api/2.0/mlflow/experiments/get-by-name?experiment_name=attnlab-date") as r:
            assert json.load(r)["experiment"]["name"] == "attnlab-date"
        url = f"{base}/get-artifact?path=attention/weights.json&run_uuid={summary['run_id']}"
        with urllib.request.urlopen(url) as response:
            assert json.load(response)[0]["source_tokens"]
    finally:
        process.send_signal(signal.SIGTERM)  # attnlab alone, as a service manager would stop it
        process.wait(timeout=30)
    deadline = time.monotonic() + 120  # a hang guard: it stops within seconds
    while _listening(port):  # its server and workers must not outlive it
        assert time.monotonic() < deadline, f"the MLflow server still listens on {port} after attnlab ui ended"
        time.sleep(0.5)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow
def test_the_command_lets_idle_threads_spin_briefly_unless_the_user_chose_otherwise():
    """OpenMP reads how idle threads wait when torch loads: importing attnlab.flows (the command's
    first import) sets a short spin, and a wait policy or a spin count the user set wins."""
    script = "import os, attnlab.flows, torch; torch.ones(1); print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}

    def seen(**chosen: str) -> str:
        return subprocess.run([sys.executable, "-c", script], env={**env, **chosen}, capture_output=True, text=True).stdout.strip()

    assert seen() == "None 1000"
    assert seen(OMP_WAIT_POLICY="PASSIVE") == "PASSIVE None"
    assert seen(GOMP_SPINCOUNT="300000") == "None 300000"


def test_console_script_errors_are_one_line_without_noise(tmp_path):
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(tmp_path / "mlflow")}
    done = subprocess.run([_console_script(), "train", "--scorer", "cosine"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert_one_line_error(done.stderr, "unknown scorer 'cosine'")
    done = subprocess.run([_console_script(), "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and all(name in done.stdout for name in ("train", "predict", "plugins", "ui"))


@pytest.mark.slow
def test_ctrl_c_in_a_terminal_ends_the_run_killed(tmp_path):
    """A real SIGINT to the whole process group, as a terminal sends it: one line, exit 130, the
    run KILLED with its checkpoint (Prefect's server survives it: it runs in its own session)."""
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(tmp_path / "mlflow")}
    for name in ("MLFLOW_TRACKING_URI", "PREFECT_API_URL"):
        env.pop(name, None)
    options = [f"-o{key}={value}" for key, value in {**TINY, "epochs": 500, "target_exact_match": "null"}.items()]
    process = terminal_popen(
        [_console_script(), "train", *options], env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen = []
    while not any("epoch   2/" in line for line in seen):
        line = process.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    os.killpg(process.pid, signal.SIGINT)
    out, rest = process.communicate(timeout=120)
    err = "".join(seen) + rest
    assert process.returncode == 130, err
    assert out == "" and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("attnlab: error: interrupted")
    client = client_for(tmp_path / "mlflow")
    (run,) = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id])
    assert run.info.status == "KILLED"
    assert [a.path for a in client.list_artifacts(run.info.run_id, "checkpoint")] == ["checkpoint/checkpoint.pt"]
    assert client.search_registered_models() == []


@pytest.mark.parametrize(
    "command, left_out",
    [
        ("train", set()),
        ("schedule", {"seed"}),
        ("sweep", {"task", "scorer", "encoder", "decoder", "seed", "embedding_dim", "batch_size", "beam_size", "device"}),
    ],
)
def test_each_command_offers_the_shared_config_flags_it_takes(capsys, command, left_out):
    from attnlab.flows.cli.options import CONFIG_FLAGS

    code, out, _ = attnlab(capsys, command, "--help")
    assert code == 0
    offered = {field for field, flag in cli_support.CLI_FIELDS.items() if f"{flag} " in out}
    grid = {"task", "scorer", "encoder", "decoder"} if command == "sweep" else set()  # a sweep's own --task NAMES, ...
    assert offered - grid == set(CONFIG_FLAGS) - left_out - grid
    assert "--config FILE.yaml" in out and "-o, --option KEY=VALUE" in out and "--experiment NAME" in out
