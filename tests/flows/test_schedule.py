"""Running attnlab as a service: `attnlab server` (real Prefect and MLflow servers on 127.0.0.1),
`attnlab schedule` serving a cron deployment of the retrain flow, runs triggered by hand, and the
one-line errors when no server is there."""

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
from types import SimpleNamespace

import pytest
from _flowkit import Burners, assert_one_line_error, chromium, client_for, spelled_words
from _session_prefect import seed_home

from attnlab.flows.cli import app as cli
from attnlab.flows.services import servers

DEPLOYMENT = "attnlab-retrain/test-nightly"
CRON = "0 3 * * *"
#: TINY sizes as `attnlab schedule` flags.
TINY_FLAGS = [
    "--train-size", "200", "--epochs", "2", "--embedding-dim", "16", "--hidden-size", "16",
    "-o", "validation_size=50", "-o", "test_size=50", "--benchmark-size", "50", "-o", "explain_examples=0",
]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _attnlab() -> str:
    return str(Path(sys.executable).with_name("attnlab"))


def _wait_for(path: Path, needle: str, process: subprocess.Popen, timeout: float) -> str:
    """The text of ``path`` once it contains ``needle``; fails when the process exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if needle in text:
            return text
        if process.poll() is not None:
            pytest.fail(f"exited with {process.returncode} before printing {needle!r}:\n{text}")
        time.sleep(0.5)
    pytest.fail(f"no {needle!r} within {timeout} s:\n{path.read_text() if path.exists() else ''}")


def _stop(process: subprocess.Popen, timeout: float = 60) -> int:
    """SIGTERM, as a service manager would; SIGKILL to its group if it does not end in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """`attnlab server` on two free ports (a new PREFECT_HOME and MLflow store) and `attnlab
    schedule` serving DEPLOYMENT against it, with the MLflow server as tracking URI."""
    root = tmp_path_factory.mktemp("service")
    prefect_port, mlflow_port = _free_port(), _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "MLFLOW_TRACKING"))}
    env.update(
        PREFECT_HOME=str(seed_home(root / "prefect-home")),
        ATTNLAB_MLFLOW_DIR=str(root / "mlflow"),
        ATTNLAB_CACHE_DIR=str(root / "cache"),
    )
    started = time.monotonic()
    out = root / "server.out"
    with open(out, "w") as stdout, open(root / "server.err", "w") as stderr:
        server = subprocess.Popen(
            [_attnlab(), "server", "--prefect-port", str(prefect_port), "--mlflow-port", str(mlflow_port)],
            stdout=stdout, stderr=stderr, env=env, start_new_session=True,
        )  # fmt: skip
    scheduler = None
    try:
        server_out = _wait_for(out, "export MLFLOW_TRACKING_URI", server, 600)  # hang guards: the events are the lines
        api = f"http://127.0.0.1:{prefect_port}/api"
        env.update(PREFECT_API_URL=api, MLFLOW_TRACKING_URI=f"http://127.0.0.1:{mlflow_port}")
        env["PREFECT_RUNNER_POLL_FREQUENCY"] = "2"  # the runner looks for runs every 10 s by default
        schedule_out = root / "schedule.out"
        with open(schedule_out, "w") as stdout, open(root / "schedule.err", "w") as stderr:
            scheduler = subprocess.Popen(
                [_attnlab(), "schedule", "--cron", CRON, "--name", "test-nightly", *TINY_FLAGS],
                stdout=stdout, stderr=stderr, env=env, start_new_session=True,
            )  # fmt: skip
        printed = _wait_for(schedule_out, "trigger a run by hand", scheduler, 600)
        yield SimpleNamespace(
            api=api, root=root, store=root / "mlflow", server_out=server_out, schedule_out=printed,
            scheduler=scheduler, ports=(prefect_port, mlflow_port), started=started,
        )  # fmt: skip
    finally:
        if scheduler is not None:
            _stop(scheduler)
        code = _stop(server)
        listening = [port for port in (prefect_port, mlflow_port) if _listening(port)]
        assert code == 0 and not listening, f"attnlab server exited {code}; still listening: {listening}"


@pytest.fixture
def prefect_at(service):
    """Prefect's client settings pointed at the service's server (inside the session harness)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: service.api}):
        yield


@pytest.mark.slow
def test_server_prints_both_urls_and_the_exports(service):
    prefect_port, mlflow_port = service.ports
    assert f"Prefect UI  http://127.0.0.1:{prefect_port}" in service.server_out
    assert f"export PREFECT_API_URL=http://127.0.0.1:{prefect_port}/api" in service.server_out
    assert f"export MLFLOW_TRACKING_URI=http://127.0.0.1:{mlflow_port}" in service.server_out
    assert servers.healthy(f"http://127.0.0.1:{mlflow_port}/health")


@pytest.mark.slow
def test_the_prefect_ui_calls_the_api_on_the_chosen_port(service):
    """The UI page reads /ui-settings to find its API; on a port other than 4200 it must name that
    port, or the UI is blank ("Can't connect to Server API at http://127.0.0.1:4200/api")."""
    prefect_port, _ = service.ports
    with urllib.request.urlopen(f"http://127.0.0.1:{prefect_port}/ui-settings", timeout=30) as response:
        assert json.load(response)["api_url"] == f"http://127.0.0.1:{prefect_port}/api"


@pytest.mark.slow
def test_the_prefect_ui_on_the_chosen_port_lists_the_deployment_in_chromium(service):
    """The UI as a user opens it, in a real headless Chromium: every API call it makes goes to the
    chosen port, and its deployments page lists the served deployment. With the UI's API URL left
    at its default, the page calls port 4200 and shows "Can't connect to Server API"."""
    prefect_port, _ = service.ports
    base = f"http://127.0.0.1:{prefect_port}"
    api_calls: list[str] = []
    with chromium() as browser:  # closed before the module's next test calls Prefect
        page = browser.new_page()
        page.on("request", lambda request: api_calls.append(request.url) if "/api/" in request.url else None)
        page.goto(f"{base}/deployments", timeout=300_000)  # hang guards: the events are the page's
        page.get_by_text("test-nightly").first.wait_for(timeout=300_000)
        shown = page.inner_text("body")
    assert "Can't connect" not in shown
    assert api_calls and [url for url in api_calls if not url.startswith(f"{base}/api/")] == []


@pytest.mark.slow
def test_the_deployment_exists_with_the_cron_schedule(service, prefect_at):
    from prefect.client.orchestration import get_client

    assert f"deployment '{DEPLOYMENT}'" in service.schedule_out and f"cron '{CRON}' (UTC), next run" in service.schedule_out
    assert f"prefect deployment run '{DEPLOYMENT}'" in service.schedule_out
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name(DEPLOYMENT)
    assert [s.schedule.cron for s in deployment.schedules] == [CRON]
    assert all(s.active for s in deployment.schedules) and not deployment.paused
    assert deployment.entrypoint == "attnlab.flows.retrain_flow.retrain_flow"
    assert deployment.parameters["config"]["train_size"] == 200 and deployment.parameters["benchmark_size"] == 50
    # One run at a time by default; a tick that finds one going is skipped, and the service says so.
    assert deployment.global_concurrency_limit.limit == 1 and deployment.parameters["concurrent_runs"] == 1
    assert deployment.concurrency_options.collision_strategy.value == "CANCEL_NEW"
    assert "at most 1 run at a time; a tick that finds it still going is skipped" in service.schedule_out
    # Retention: ten versions by default (pruning itself: test_retention.py).
    assert deployment.parameters["keep"] == 10 and "keeps the newest 10 versions of attnlab-date" in service.schedule_out


@pytest.mark.slow
def test_runs_triggered_by_hand_are_executed_and_a_failure_does_not_stop_the_service(service, prefect_at):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    with get_client(sync_client=True) as client:
        params = client.read_deployment_by_name(DEPLOYMENT).parameters
    broken = {**params, "config": {**params["config"], "task_options": {"no_such_option": 1}}}
    failed = run_deployment(DEPLOYMENT, parameters=broken, timeout=180, poll_interval=1)
    assert failed.state.is_failed() and "no_such_option" in failed.state.message
    done = run_deployment(DEPLOYMENT, timeout=240, poll_interval=1)
    assert done.state.is_completed(), done.state.message
    client = client_for(service.store)
    versions = client.search_model_versions("name='attnlab-date'")
    assert len(versions) == 1
    version = versions[0]
    assert str(client.get_registered_model("attnlab-date").aliases["champion"]) == str(version.version)
    assert version.tags["promotion.promoted"] == "true" and version.tags["promotion.reason"].startswith("first champion")
    expected = f"attnlab-date version {version.version} promoted to champion"
    for _ in range(40):  # the serving process writes its log lines shortly after the run ends
        served_log = (service.root / "schedule.err").read_text()
        if expected in served_log:
            break
        time.sleep(0.5)
    assert expected in served_log
    retrain_run = client.get_run(version.tags["promotion.run_id"])
    assert retrain_run.data.tags["prefect.flow_run_id"] == str(done.id)
    assert retrain_run.info.status == "FINISHED"
    assert retrain_run.data.params["torch_threads"] == str(len(os.sched_getaffinity(0)))  # one run at a time: all its cores


@pytest.mark.slow
def test_schedule_to_a_work_pool_creates_the_deployment_there(service, prefect_at):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate

    with get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name="test-pool", type="process"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "MLFLOW_TRACKING"))}
    env.update(PREFECT_HOME=str(service.root / "prefect-home"), PREFECT_API_URL=service.api, ATTNLAB_MLFLOW_DIR=str(service.store))
    done = subprocess.run(
        [_attnlab(), "schedule", "--cron", "30 4 * * 1", "--timezone", "Europe/Berlin", "--work-pool", "test-pool",
         "--name", "pooled", *TINY_FLAGS],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "work pool 'test-pool'" in done.stdout and "prefect worker start --pool test-pool" in done.stdout
    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name("attnlab-retrain/pooled")
    assert deployment.work_pool_name == "test-pool"
    assert [(s.schedule.cron, s.schedule.timezone) for s in deployment.schedules] == [("30 4 * * 1", "Europe/Berlin")]
    assert deployment.job_variables["env"] == {"ATTNLAB_MLFLOW_DIR": str(service.store)}


# --------------------------------------------------------------------------- mistakes


@pytest.fixture
def no_prefect_server(tmp_path, monkeypatch):
    """No PREFECT_API_URL anywhere (the session harness sets one in the settings)."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    with temporary_settings(restore_defaults={PREFECT_API_URL}):
        yield


def test_schedule_without_a_prefect_server_is_one_line_and_exit_2(capsys, empty_store, no_prefect_server):
    code = cli.main(["schedule", "--cron", CRON])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, "schedules need a Prefect server", "prefect server start", "PREFECT_API_URL")


def test_schedule_with_an_unreachable_prefect_server_is_one_line_and_exit_2(capsys, empty_store):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    url = f"http://127.0.0.1:{_free_port()}/api"
    with temporary_settings(updates={PREFECT_API_URL: url}):
        code = cli.main(["schedule", "--cron", CRON])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, f"cannot reach the Prefect server at {url}")


@pytest.mark.parametrize(
    "args, needles",
    [
        (["--cron", "0 3 * *"], ["--cron '0 3 * *' is not a cron expression", "five fields"]),
        (["--cron", "0 3 * * *", "--timezone", "Mars/Olympus"], ["--timezone 'Mars/Olympus'"]),
        (["--cron", "0 3 * * *", "--margin", "1.5"], ["--margin 1.5", "[0, 1)"]),
        (["--cron", "0 3 * * *", "--scorer", "cosine"], ["unknown scorer 'cosine'"]),
        (["--cron", "0 3 * * *", "-o", "train_size=abc"], ["train_size", "-o train_size=abc"]),
        (["--cron", "0 3 * * *", "--max-concurrent", "0"], ["--max-concurrent 0: give at least 1"]),
        (["--cron", "0 3 * * *", "--when-busy", "later"], ["--when-busy 'later': choose skip or queue"]),
        (["--cron", "0 3 * * *", "--keep", "1"], ["--keep 1: give at least 2"]),
        (
            ["--cron", "0 3 * * *", "--task", "pairs", "-o", "task.path=/no/such/words.csv"],
            ["task 'pairs': /no/such/words.csv does not exist"],
        ),
        ([], ["--cron"]),
    ],
)
def test_schedule_mistakes_are_one_line_and_exit_2(capsys, empty_store, no_prefect_server, args, needles):
    code = cli.main(["schedule", *args])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, *needles)


def test_server_refuses_a_busy_port(capsys, empty_store):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = cli.main(["server", "--prefect-port", str(port), "--mlflow-port", str(_free_port())])
    assert code == 2
    assert_one_line_error(capsys.readouterr().err, f"cannot listen on 127.0.0.1:{port} (--prefect-port)")


@pytest.mark.slow
def test_each_cron_tick_starts_one_run_on_a_busy_machine(service, prefect_at):
    """A deployment on an every-minute cron, served while every core is kept busy: once its first
    tick has fired, that tick has exactly one flow run (a tick once fired twice under load, when
    the schedule was written twice and the second write raced the scheduler's first runs)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        DeploymentFilter,
        DeploymentFilterName,
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
    )
    from prefect.client.schemas.objects import StateType

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "MLFLOW_TRACKING"))}
    env.update(PREFECT_HOME=str(service.root / "prefect-home"), PREFECT_API_URL=service.api, ATTNLAB_MLFLOW_DIR=str(service.store),
               PREFECT_RUNNER_POLL_FREQUENCY="2")  # fmt: skip
    out = service.root / "every-minute.out"
    with Burners(), open(out, "w") as stdout, open(service.root / "every-minute.err", "w") as stderr:
        scheduler = subprocess.Popen([_attnlab(), "schedule", "--cron", "* * * * *", "--name", "every-minute", *TINY_FLAGS],
                                     stdout=stdout, stderr=stderr, env=env, start_new_session=True)  # fmt: skip
        try:
            _wait_for(out, "trigger a run by hand", scheduler, 600)
            ticks: dict = {}
            with get_client(sync_client=True) as client:
                while not ticks:  # the event: a tick has left the Scheduled state
                    assert scheduler.poll() is None, (service.root / "every-minute.err").read_text()[-2000:]
                    started = client.read_flow_runs(
                        deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=["every-minute"])),
                        flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(not_any_=[StateType.SCHEDULED]))),
                    )  # fmt: skip
                    ticks = {}
                    for run in started:
                        ticks.setdefault(run.expected_start_time, []).append(run)
                    time.sleep(2)
                every = client.read_flow_runs(deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=["every-minute"])))
        finally:
            _stop(scheduler)
    per_tick: dict = {}
    for run in every:
        per_tick.setdefault(run.expected_start_time, []).append(run.state_type.value)
    assert all(len(states) == 1 for states in per_tick.values()), per_tick


# --------------------------------------------------------------------------- a file that changes


@pytest.fixture(scope="module")
def file_service(service):
    """`attnlab schedule` serving a deployment of the pairs task on words.csv (named after its
    registered model, attnlab-pairs-words) beside DEPLOYMENT; (the file, the deployment, where it
    prints)."""
    words = service.root / "words.csv"
    words.write_text(spelled_words(300))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_API", "MLFLOW_TRACKING"))}
    env.update(PREFECT_HOME=str(service.root / "prefect-home"), PREFECT_API_URL=service.api, ATTNLAB_MLFLOW_DIR=str(service.store),
               PREFECT_RUNNER_POLL_FREQUENCY="2")  # fmt: skip
    out, err = service.root / "words.out", service.root / "words.err"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        scheduler = subprocess.Popen(
            [_attnlab(), "schedule", "--cron", CRON, "--task", "pairs", f"-otask.path={words}", "-otask.source_column=word",
             "-otask.target_column=spelled", "-otask.target_tokenization=whitespace", *TINY_FLAGS],
            stdout=stdout, stderr=stderr, env=env, start_new_session=True,
        )  # fmt: skip
    try:
        _wait_for(out, "trigger a run by hand", scheduler, 600)
        yield SimpleNamespace(words=words, deployment="attnlab-retrain/pairs-words", err=err, out=out)
    finally:
        _stop(scheduler)


def _retrain_runs(client) -> list:
    experiment = client.get_experiment_by_name("attnlab-pairs-words")
    return client.search_runs([experiment.experiment_id], "tags.`attnlab.kind` = 'retrain'", order_by=["attributes.start_time DESC"])


@pytest.mark.slow
def test_a_served_tick_on_a_file_trains_and_a_deleted_file_fails_one_tick_in_one_line(service, file_service, prefect_at):
    """Two ticks of a served schedule: the first trains and becomes champion; the file deleted,
    the second fails in one line and its run ends FAILED with the reason. (Which ticks train on
    a file that changed or did not: the retrain flow's own tests, test_retrain_on_change.py.)"""
    from prefect.deployments import run_deployment

    client = client_for(service.store)

    def tick():
        state = run_deployment(file_service.deployment, timeout=600, poll_interval=1).state
        return state, _retrain_runs(client)[0]

    state, first = tick()
    assert state.is_completed(), state.message
    assert "attnlab.retrain.skipped" not in first.data.tags and first.info.status == "FINISHED"
    assert [int(v.version) for v in client.search_model_versions("name='attnlab-pairs-words'")] == [1]

    file_service.words.unlink()
    state, second = tick()
    line = f"retrain of attnlab-pairs-words failed: task 'pairs': {file_service.words} does not exist; the champion is unchanged"
    assert state.is_failed() and state.message == line
    assert second.info.status == "FAILED" and "does not exist" in second.data.tags["attnlab.error"]
    assert second.data.tags["attnlab.pid"] and second.data.tags["attnlab.host"]  # found stale if its process dies
    assert not [run for run in _retrain_runs(client) if run.info.status == "RUNNING"]
    for _ in range(40):  # the serving process writes its log lines shortly after the run ends
        served = file_service.err.read_text()
        if line in served:
            break
        time.sleep(0.5)
    assert line in served and "Traceback" not in served
