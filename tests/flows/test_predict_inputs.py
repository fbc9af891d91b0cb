"""Inputs a model's task refuses (a date that does not exist, a source longer than the task's):
`attnlab predict` says so in one line with exit status 2 before loading the model or importing
torch, prefect or mlflow, and the served pyfunc model answers HTTP 400 with a short message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _flowkit import assert_one_line_error

from attnlab.flows.cli.app import main

LONG = "1" * 5000


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """An untrained tiny date model saved as a bundle folder."""
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(hidden_size=8, embedding_dim=8)
    return save_bundle(tmp_path_factory.mktemp("bundle"), config, build_model(config, build_task(config)))


@pytest.fixture(scope="module")
def served(bundle, tmp_path_factory):
    """MLflow's scoring server app over the attnlab pyfunc model of ``bundle``."""
    import mlflow.pyfunc
    from fastapi.testclient import TestClient
    from mlflow.models import ModelSignature
    from mlflow.pyfunc import scoring_server
    from mlflow.types import ColSpec, Schema

    from attnlab.flows import pyfunc

    path = tmp_path_factory.mktemp("served") / "model"
    signature = ModelSignature(inputs=Schema([ColSpec("string", "source")]), outputs=Schema([ColSpec("string")]))
    mlflow.pyfunc.save_model(
        str(path), python_model=pyfunc.MODEL_CODE, artifacts={pyfunc.BUNDLE: str(bundle)}, signature=signature, pip_requirements=[]
    )
    model = mlflow.pyfunc.load_model(str(path))
    return model, TestClient(scoring_server.init(model))


@pytest.mark.parametrize(
    "text,needles",
    [
        ("99-99-2023", ["'99-99-2023'", "no month 99"]),
        ("31-02-2023", ["'31-02-2023'", "February 2023 has no day 31"]),
        ("29-02-2023", ["'29-02-2023'", "February 2023 has no day 29"]),
        (LONG, ["5000 characters", "at most 10"]),
        ("25.12.2023", ["'.'", "alphabet"]),
        ("31-01-1999", ["'31-01-1999' is in 1999", "trained on (2000-2030)", "-o task.min_year=1999"]),
    ],
)
def test_predict_refuses_what_the_task_refuses(bundle, capsys, text, needles):
    assert main(["predict", "--model", str(bundle), "25-12-2023", text]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert_one_line_error(err, *needles)


def test_predict_answers_a_real_leap_day(bundle, capsys):
    assert main(["predict", "--model", str(bundle), "29-02-2024"]) == 0
    assert capsys.readouterr().out.startswith("29-02-2024 -> ")


def test_a_model_option_that_names_nothing_is_refused_at_once(capsys):
    assert main(["predict", "--model", "nosuch", "25-12-2023"]) == 2
    assert_one_line_error(capsys.readouterr().err, "'nosuch'", "neither a folder nor an MLflow model URI", "models:/NAME@ALIAS")


@pytest.mark.parametrize(
    "args,needles",
    [
        (
            ["--model", "models:/../../etc/passwd"],
            ["'models:/../../etc/passwd'", "models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID/model"],
        ),
        (["--model", "runs:/../../etc/passwd"], ["'runs:/../../etc/passwd'", "runs:/RUN_ID/model"]),
        (["--model", ""], ["--model ''", "is empty", "leave --model out"]),
        (["--task", "nosuch"], ["unknown task 'nosuch'", "cmudict, date, date-formats, pairs, reverse"]),
    ],
)
def test_a_malformed_model_or_unknown_task_is_refused_before_the_store_opens(empty_store, capsys, args, needles):
    assert main(["predict", *args, "25-12-2023"]) == 2
    assert_one_line_error(capsys.readouterr().err, *needles)
    assert not empty_store.exists()


@pytest.mark.parametrize(
    "args,needles",
    [
        (["train", "--scorer", "cosine"], ["'cosine'", "scaled_dot"]),
        (["train", "-o", "hidden_size=abc"], ["'abc'", "hidden_size"]),
        (["train", "--epochs", "-3"], ["'-3'", "epochs"]),
        (["sweep", "--scorer", "dot,nosuch"], ["'nosuch'", "scaled_dot"]),
        (["schedule", "--cron", "bad"], ["'bad'", "five fields"]),
        (["plugins", "--nosuchflag"], ["--nosuchflag"]),
    ],
)
def test_other_mistakes_are_one_line_with_exit_2(capsys, args, needles):
    assert main(args) == 2
    assert_one_line_error(capsys.readouterr().err, *needles)


def test_mistakes_import_no_torch_prefect_or_mlflow(bundle, tmp_path):
    """Each mistake in a fresh interpreter: exit 2 with none of the heavy libraries imported."""
    mistakes = [
        ["predict", "--model", str(bundle), "99-99-2023"],
        ["predict", "--model", str(bundle), LONG],
        ["predict", "--model", "nosuch", "25-12-2023"],
        ["predict", "--model", "models:/../../etc/passwd", "25-12-2023"],
        ["predict", "--model", "", "25-12-2023"],
        ["predict", "--task", "nosuch", "25-12-2023"],
        ["sweep", "--scorer", "dot,nosuch"],
        ["train", "-o", "hidden_size=abc"],
        ["train", "--epochs", "-3"],
        ["plugins", "--nosuchflag"],
    ]
    script = (
        "import json, sys\n"
        "from attnlab.flows.cli.app import main\n"
        "code = main(json.loads(sys.argv[1]))\n"
        "print(json.dumps([code, sorted(m for m in ('torch', 'prefect', 'mlflow') if m in sys.modules)]))\n"
    )
    for args in mistakes:
        done = subprocess.run([sys.executable, "-c", script, json.dumps(args)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
        code, heavy = json.loads(done.stdout.strip().splitlines()[-1])
        assert (code, heavy) == (2, []), (args[:3], done.stderr)
        assert_one_line_error(done.stderr)


def test_pyfunc_model_raises_invalid_parameter_value(served):
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE, ErrorCode

    model, _ = served
    import pandas as pd

    with pytest.raises(MlflowException) as caught:
        model.predict(pd.DataFrame({"source": ["25-12-2023", "31-02-2023"]}))
    assert caught.value.error_code == ErrorCode.Name(INVALID_PARAMETER_VALUE)
    assert "February 2023 has no day 31" in caught.value.message


@pytest.mark.parametrize(
    "text,needle",
    [("99-99-2023", "no month 99"), ("29-02-2023", "has no day 29"), (LONG, "5000 characters"), ("28-06-2054", "-o task.max_year=2054")],
)
def test_served_model_answers_400_without_a_stack_trace(served, text, needle):
    _, client = served
    response = client.post("/invocations", json={"dataframe_split": {"columns": ["source"], "data": [[text]]}})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error_code"] == "INVALID_PARAMETER_VALUE" and needle in body["message"]
    assert "stack_trace" not in body and "Traceback" not in response.text
    assert len(response.text) < 600, response.text


def test_served_model_answers_real_dates(served):
    _, client = served
    response = client.post("/invocations", json={"dataframe_split": {"columns": ["source"], "data": [["29-02-2024"], ["25-12-2023"]]}})
    assert response.status_code == 200, response.text
    assert len(response.json()["predictions"]) == 2


def test_a_mistake_against_the_champion_imports_no_heavy_library(learned_store, tmp_path):
    """The default model, the task's champion on the embedded store: its config is read from the
    store's files, so a refused input is answered before MLflow, torch or Prefect are imported."""
    import os

    folder, _ = learned_store
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(folder)}
    env.pop("MLFLOW_TRACKING_URI", None)
    script = (
        "import json, sys\n"
        "from attnlab.flows.cli.app import main\n"
        "code = main(['predict', '99-99-2023'])\n"
        "print(json.dumps([code, sorted(m for m in ('torch', 'prefect', 'mlflow') if m in sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, []], done.stderr
    assert_one_line_error(done.stderr, "'99-99-2023'", "no month 99")
