"""The served model (MLflow's scoring server over the attnlab pyfunc model): a refused request is
answered HTTP 400 with a one-sentence message, a request over the row limit at once, and
``mlflow models serve`` stops with all its processes on SIGTERM while it computes a request."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from _flowkit import free_port, post, server_answers, stop_group, wait_until

from attnlab.lab.serving import MAX_ROWS, rows_problem


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    """An untrained tiny date model saved as an MLflow pyfunc model."""
    import mlflow.pyfunc

    from attnlab.flows import pyfunc
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(hidden_size=8, embedding_dim=8)
    bundle = save_bundle(tmp_path_factory.mktemp("bundle"), config, build_model(config, build_task(config)))
    path = tmp_path_factory.mktemp("served") / "model"
    mlflow.pyfunc.save_model(
        str(path), python_model=pyfunc.MODEL_CODE, artifacts={pyfunc.BUNDLE: str(bundle)}, signature=pyfunc.signature(), pip_requirements=[]
    )
    return path


@pytest.fixture(scope="module")
def client(model_dir):
    import mlflow.pyfunc
    from fastapi.testclient import TestClient
    from mlflow.pyfunc import scoring_server

    return TestClient(scoring_server.init(mlflow.pyfunc.load_model(str(model_dir))))


def rows(count: int, text: str = "25-12-2023") -> bytes:
    return json.dumps({"dataframe_split": {"columns": ["source"], "data": [[text]] * count}}).encode()


def test_a_refused_input_is_answered_with_its_reason_alone(client):
    body = {"dataframe_split": {"columns": ["source"], "data": [["25-12-2023"], ["99-99-2023"], ["01-01-2024"]]}}
    response = client.post("/invocations", json=body)
    assert response.status_code == 400
    answer = response.json()
    assert answer["error_code"] == "INVALID_PARAMETER_VALUE" and "stack_trace" not in answer
    # It was "Failed to predict data '      source\n0  25-12-2023\n1 ...'. \nError: ..."
    assert answer["message"] == "'99-99-2023' is not a real date: there is no month 99 (months 01-12)"


def test_a_request_without_a_source_column_is_answered_in_one_sentence(client):
    body = {"dataframe_split": {"columns": ["text", "id"], "data": [["25-12-2023", 1]]}}
    response = client.post("/invocations", json=body)
    assert response.status_code == 400
    # MLflow's schema check answered "Failed to predict data '   text  id\n0 ...'. \nError: ..."
    assert response.json()["message"] == "expected a 'source' column, got columns 'text', 'id'"


def test_a_request_with_one_other_column_is_refused_and_a_plain_list_is_taken(client):
    body = {"dataframe_split": {"columns": ["word"], "data": [["25-12-2023"]]}}
    response = client.post("/invocations", json=body)
    assert (response.status_code, response.json()["message"]) == (400, "expected a 'source' column, got columns 'word'")
    response = client.post("/invocations", json={"inputs": ["25-12-2023", "01-01-2000"]})
    assert response.status_code == 200 and len(response.json()["predictions"]) == 2


def test_a_null_source_is_named_a_missing_value(client):
    body = {"dataframe_split": {"columns": ["source"], "data": [["25-12-2023"], [None]]}}
    response = client.post("/invocations", json=body)
    assert (response.status_code, response.json()["message"]) == (400, "row 2: the source is missing (null); give a string")


def test_a_request_over_the_row_limit_is_refused_before_decoding(client):
    started = time.monotonic()
    response = client.post("/invocations", content=rows(MAX_ROWS + 1), headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text[:300]
    assert response.json()["message"] == rows_problem(MAX_ROWS + 1)
    assert time.monotonic() - started < 30  # decoding them took minutes on a loaded machine


def group_alive(pgid: int) -> bool:
    import psutil

    return any(p.status() != psutil.STATUS_ZOMBIE for p in psutil.process_iter() if _pgid(p) == pgid)


def _pgid(process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except (ProcessLookupError, PermissionError):
        return None


@pytest.mark.slow
def test_mlflow_models_serve_refuses_too_many_rows_and_stops_on_sigterm_mid_request(model_dir, tmp_path):
    """A real ``mlflow models serve``: 100,000 rows are refused at once (they were decoded for
    minutes: a 504 after 60 s, and the worker went on computing), and SIGTERM while it computes a
    request of the most rows ends the server and its worker."""
    import psutil

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "models",
        "serve",
        "-m",
        str(model_dir),
        "--env-manager",
        "local",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    with open(tmp_path / "serve.log", "wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        wait_until(lambda: server_answers(f"{url}/ping", server), 300, "the server answers")
        started = time.monotonic()
        status, text = post(f"{url}/invocations", rows(100_000), timeout=60)
        assert (status, json.loads(text)["message"]) == (400, rows_problem(100_000)), text[:300]
        assert time.monotonic() - started < 30

        worker = next(p for p in psutil.Process(server.pid).children(recursive=True) if "uvicorn" in " ".join(p.cmdline()))
        threads = worker.num_threads()
        answers: list = []
        caller = threading.Thread(target=lambda: answers.append(_post_or_error(f"{url}/invocations", rows(MAX_ROWS))))
        caller.start()
        wait_until(lambda: worker.num_threads() > threads or answers, 60, "the request is being computed")
        os.kill(server.pid, signal.SIGTERM)
        wait_until(lambda: not group_alive(server.pid), 60, "the server and its worker stop on SIGTERM")
        caller.join(timeout=60)
        assert answers and answers[0] in (200, "closed"), answers
    finally:
        stop_group(server)


def _post_or_error(url: str, data: bytes):
    try:
        return post(url, data, timeout=120)[0]
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return "closed"
