"""The MLflow UI fits the job: attnlab's experiments are model-training experiments with a saved
runs view (the columns that matter), links open the runs table, sweep parents have distinct names.

The browser side is checked by docs/screenshots.sh (headless Chromium); the last test here runs
the same check when Chromium is installed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from _flowkit import client_for, terminal_popen

from attnlab.flows.tracking import mlflow_ui
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking.store import resolve_store

VIEW_TAG = mlflow_ui.SAVED_VIEW_PREFIX + mlflow_ui.RUNS_VIEW_ID


def test_saved_view_tag_is_the_envelope_mlflows_views_menu_reads():
    key, value = mlflow_ui.runs_view_tag(now=1_700_000_000.5)
    assert key == "mlflow.sharedViewState.attnlab-results"
    envelope = json.loads(value)
    # MLflow 3.17's UI drops a saved view unless name is a string, createdAt a number, state a string.
    assert envelope["name"] == "attnlab results" and envelope["createdAt"] == 1_700_000_000_500
    state = json.loads(envelope["state"])
    assert state["selectedColumns"][:4] == [
        "metrics.`test_exact_match`",
        "metrics.`test_alignment_accuracy`",
        "params.`scorer`",
        "params.`encoder`",
    ]
    assert state["columnOrder"] == state["selectedColumns"]
    assert state["selectedColumns"][-1] == "tags.`attnlab.champion`"  # the champion's run says so


def test_runs_page_url_opens_the_model_training_layout_with_the_view():
    url = mlflow_ui.runs_page_url("http://127.0.0.1:5000/", "7")
    assert url == "http://127.0.0.1:5000/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=attnlab-results"


def test_new_and_old_experiments_become_model_training_experiments_with_the_view(empty_store):
    client = client_for(empty_store)
    store = resolve_store()
    new = tracking.ensure_experiment(client, "fresh", store)
    tags = client.get_experiment(new).tags
    assert tags[mlflow_ui.EXPERIMENT_KIND_TAG] == "custom_model_development"
    assert json.loads(tags[VIEW_TAG])["name"] == "attnlab results"

    old = client.create_experiment("made-before", artifact_location=(store.artifact_root / "made-before").as_uri())
    client.set_experiment_tag(old, mlflow_ui.EXPERIMENT_KIND_TAG, "genai_development")  # a user's choice
    assert tracking.ensure_experiment(client, "made-before", store) == old
    tags = client.get_experiment(old).tags
    assert VIEW_TAG in tags  # the missing tag is added ...
    assert tags[mlflow_ui.EXPERIMENT_KIND_TAG] == "genai_development"  # ... a present one kept


def test_two_sweeps_of_one_grid_get_distinct_readable_parent_names(empty_store, monkeypatch):
    from attnlab.evaluation.compare import Grid
    from attnlab.flows.sweep import sweep_parent
    from attnlab.lab.config import ExperimentConfig

    client = client_for(empty_store)
    grid = Grid(values={"scorer": ("dot", "additive"), "encoder": ("gru",)}, seeds=(0, 1))
    wide = Grid(values={"scorer": ("none", "dot", "scaled_dot", "general", "additive")}, seeds=(0,))
    monkeypatch.setattr(sweep_parent.time, "strftime", lambda fmt, *when: "12-01 05:19:42")  # one second
    runs = [sweep_parent.start_parent(client, "sweeps", ExperimentConfig(), g, ()) for g in (grid, grid, wide)]
    names = [client.get_run(run_id).info.run_name for run_id in runs]
    assert names == [
        "sweep scorer=dot,additive encoder=gru seeds=0,1 12-01 05:19:42",
        "sweep scorer=dot,additive encoder=gru seeds=0,1 12-01 05:19:42 #2",
        "sweep scorer=5 values seeds=0 12-01 05:19:42",
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_the_printed_link_opens_the_runs_table_with_attnlabs_columns_in_chromium(empty_store, tmp_path):
    """A run's experiment, served by ``attnlab ui``, opened by the link it prints: the runs table
    in the model-training layout, with the saved view's columns."""
    client = client_for(empty_store)
    experiment = tracking.ensure_experiment(client, "attnlab-date", resolve_store())
    run = client.create_run(experiment, run_name="dot-gru-rnn-seed0").info.run_id
    for name, value in (("scorer", "dot"), ("encoder", "gru")):
        client.log_param(run, name, value)
    for name, value in (("test_exact_match", 0.5), ("test_alignment_accuracy", 0.25)):
        client.log_metric(run, name, value)
    client.set_terminated(run)
    port = _free_port()
    script = Path(sys.executable).with_name("attnlab")
    server = terminal_popen([str(script), "ui", "--port", str(port)], stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = ""
        while not line.strip().startswith("attnlab-date:"):  # after the address, progress and the experiments list
            line = server.stderr.readline()
            assert line, "attnlab ui ended before printing its links"
        link = line.split(": ", 1)[1].strip()
        threading.Thread(target=server.stderr.read, daemon=True).start()  # the server's log, unread
        deadline = time.monotonic() + 300
        while True:  # the server answers /health once it is up
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "MLflow UI did not start"
                time.sleep(0.5)
        dom = subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={tmp_path / 'profile'}",
                "--window-size=1800,900",
                "--virtual-time-budget=15000",
                "--dump-dom",
                link,
            ],
            capture_output=True,
            text=True,
            timeout=180,
        ).stdout
    finally:
        os.killpg(server.pid, signal.SIGINT)
        server.wait(timeout=60)
    assert "dot-gru-rnn-seed0" in dom
    for header in ("test_exact_match", "test_alignment_accuracy", "scorer", "encoder"):
        assert f">{header}<" in dom, header
    assert "attnlab results" in dom  # the saved view is the one shown


def _server_processes(port: int) -> list[int]:
    """Pids of processes whose command line serves ``port`` (an ``mlflow server ... --port``)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--port" in args and str(port).encode() in args and any(b"mlflow" in a for a in args):
            found.append(int(entry.name))
    return found


def _ui(port: int, tmp_path: Path, *options: str) -> subprocess.Popen:
    script = Path(sys.executable).with_name("attnlab")
    env = {**os.environ, "ATTNLAB_CACHE_DIR": str(tmp_path / "cache")}
    return subprocess.Popen([str(script), "ui", "--port", str(port), *options], stderr=subprocess.PIPE, text=True, env=env)


@pytest.mark.slow
def test_ui_prints_its_links_only_once_the_server_answers_and_says_it_is_waiting(empty_store, tmp_path):
    """The links come after a progress line and only once /health answers: every health check
    begun after the links were read answered; the first check after them answered at once.
    SIGTERM then stops the UI and leaves nothing serving the port."""
    from attnlab.flows.services.servers import healthy, port_free

    tracking.ensure_experiment(client_for(empty_store), "attnlab-date", resolve_store())
    port = _free_port()
    health = f"http://127.0.0.1:{port}/health"
    checks: list[tuple[float, bool]] = []  # (when a check began, whether it answered)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            began = time.monotonic()
            checks.append((began, healthy(health, timeout=1.0)))
            done.wait(0.05)

    started = time.monotonic()
    ui = _ui(port, tmp_path, "--timeout", "600")
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        lines = []
        while not any(line.startswith("  attnlab-date: ") for line in lines):
            line = ui.stderr.readline()
            assert line, f"attnlab ui ended before its links: {lines}"
            lines.append(line.rstrip("\n"))
        printed = time.monotonic()
        assert healthy(health, timeout=5.0)  # the server answers when its links appear
        done.set()
        watcher.join()
        answered = min(began for began, ok in checks if ok) if any(ok for _, ok in checks) else None
        print(f"attnlab ui: links printed {printed - started:.1f} s after the start; /health first answered a check begun "
              f"{(answered or printed) - started:.1f} s after it")  # fmt: skip
        assert [began for began, ok in checks if not ok and began > printed] == []
        waiting = [i for i, line in enumerate(lines) if line.startswith(f"waiting for the MLflow UI at http://127.0.0.1:{port} (")]
        assert waiting and waiting[0] < lines.index(f"  experiments: http://127.0.0.1:{port}/#/experiments?workflowType=machine_learning")
    finally:
        done.set()
        ui.terminate()
        ui.wait(timeout=60)
    assert port_free(port) is None and _server_processes(port) == []


def test_ui_that_does_not_answer_within_its_bound_ends_in_one_line_with_nothing_left(empty_store, tmp_path):
    from attnlab.flows.services.servers import port_free

    port = _free_port()
    ui = _ui(port, tmp_path, "--timeout", "0.5")
    _, err = ui.communicate(timeout=120)
    log = tmp_path / "cache" / "server" / f"mlflow-ui-{port}.log"
    errors = [line for line in err.splitlines() if line.startswith("attnlab: error: ")]
    assert ui.returncode == 1 and "Traceback" not in err
    assert errors == [
        f"attnlab: error: the MLflow UI at http://127.0.0.1:{port} did not answer within 0.5 s (--timeout); it was stopped. "
        f"Its log: {log}. Read its last lines, then run again with a longer wait, e.g. --timeout 180"
    ]
    assert err.rstrip("\n").splitlines()[-1] == errors[0]
    assert "experiments:" not in err
    assert port_free(port) is None and _server_processes(port) == []
