"""The served model's ``beam_size`` parameter: logged in the model's signature (default 1),
reaching the decoder through the pyfunc model's params and MLflow's scoring server, and a bad
value answered HTTP 400 (one sentence where attnlab decides it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _flowkit import untrained_bundle

SOURCES = ["25-12-2023", "01-02-2003", "29-02-2024"]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return untrained_bundle(tmp_path_factory.mktemp("bundle"))


@pytest.fixture(scope="module")
def served(bundle, tmp_path_factory):
    """(the pyfunc model of ``bundle`` with attnlab's signature, MLflow's scoring server app over it)."""
    import mlflow.pyfunc
    from fastapi.testclient import TestClient
    from mlflow.pyfunc import scoring_server

    from attnlab.flows import pyfunc

    path = tmp_path_factory.mktemp("served") / "model"
    mlflow.pyfunc.save_model(
        str(path), python_model=pyfunc.MODEL_CODE, artifacts={pyfunc.BUNDLE: str(bundle)}, signature=pyfunc.signature(), pip_requirements=[]
    )
    model = mlflow.pyfunc.load_model(str(path))
    return model, TestClient(scoring_server.init(model))


def expected(bundle, beam_size: int) -> list[str]:
    from attnlab.model.bundle import load_bundle
    from attnlab.model.predict import predict

    _, task, model = load_bundle(bundle)
    return [r.output for r in predict(model, task, SOURCES, beam_size=beam_size)]


def request(client, params=None):
    body = {"dataframe_split": {"columns": ["source"], "data": [[text] for text in SOURCES]}}
    if params is not None:
        body["params"] = params
    return client.post("/invocations", json=body)


def test_logged_models_take_a_beam_size_param(bundle, tmp_path, monkeypatch):
    import mlflow
    from attnlab.flows.tracking.registry import log_model
    from attnlab.lab.config import ExperimentConfig
    from mlflow import MlflowClient

    monkeypatch.chdir(tmp_path)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path}/mlflow.db")
    try:
        client = MlflowClient()
        experiment = client.create_experiment("beam", artifact_location=str(tmp_path / "artifacts"))
        run = client.create_run(experiment)
        uri, _ = log_model(client, run.info.run_id, bundle, ExperimentConfig(hidden_size=7, embedding_dim=7), SOURCES[:1])
        client.set_terminated(run.info.run_id)
        params = mlflow.models.get_model_info(uri).signature.params
    finally:
        mlflow.set_tracking_uri(None)
    assert [(p.name, p.dtype.name, p.default) for p in params.params] == [("beam_size", "long", 1)]


def test_pyfunc_params_choose_the_decoding(served, bundle):
    import pandas as pd

    model, _ = served
    frame = pd.DataFrame({"source": SOURCES})
    assert model.predict(frame) == expected(bundle, 1)
    assert model.predict(frame, params={"beam_size": 3}) == expected(bundle, 3)
    assert expected(bundle, 3) != expected(bundle, 1)  # this seed's model: beam search answers otherwise


def test_the_scoring_server_passes_beam_size_on(served, bundle):
    _, client = served
    assert request(client).json()["predictions"] == expected(bundle, 1)
    response = request(client, {"beam_size": 3})
    assert response.status_code == 200, response.text
    assert response.json()["predictions"] == expected(bundle, 3)


@pytest.mark.parametrize("value", [0, 101, -1])
def test_a_beam_size_out_of_range_is_one_sentence_400(served, value):
    _, client = served
    response = request(client, {"beam_size": value})
    assert response.status_code == 400
    assert response.json() == {
        "error_code": "INVALID_PARAMETER_VALUE",
        "message": f"beam_size {value} is out of range; give a whole number from 1 (greedy decoding) to 100",
        **{k: v for k, v in response.json().items() if k in ("sqlstate", "error_class")},
    }


@pytest.mark.parametrize("value", ["abc", 2.5, [1, 2]])
def test_a_beam_size_of_another_type_is_refused_by_the_signature(served, value):
    """MLflow checks a param's type against the signature before the model runs, in its own words
    (the scoring server's message, with the input printed): a 400 naming beam_size."""
    _, client = served
    response = request(client, {"beam_size": value})
    assert response.status_code == 400
    answer = response.json()
    assert answer["error_code"] == "INVALID_PARAMETER_VALUE" and "beam_size" in answer["message"]
    assert "stack_trace" not in answer
