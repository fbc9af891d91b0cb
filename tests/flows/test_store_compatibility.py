"""A store written by attnlab 0.1.0, before its packages were regrouped (tests/fixtures/store-0.1.0),
still works with today's code: its logged model loads and predicts (the model's own copy of
``pyfunc_model.py`` imports ``attnlab.flows.pyfunc`` and is checked by sha256), a new run is
promoted on its fixed benchmark, and the retrain flow (which deployments name by
``attnlab.flows.retrain_flow``) retrains on it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _flowkit import TINY, client_for, point_at
from test_store_integrity import attnlab

FIXTURE = Path(__file__).parents[1] / "fixtures" / "store-0.1.0"
#: The fixture's run, its registered version's benchmark run, and the date it is asked.
RUN = "6ab7b6b1d16046509019a4666989b404"
BENCHMARK_RUN = "34975f4c8eba429cba921cea0fa751ed"
DATE = "25-12-2023"
TINY_ARGS = [f"-o{key}={value}" for key, value in {**TINY, "epochs": 1}.items()]


@pytest.fixture
def old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> Path:
    """A copy of the 0.1.0 store, relocated into its new folder as a user would after a copy."""
    store = point_at(tmp_path / "mlflow", monkeypatch)
    shutil.copytree(FIXTURE, store)
    code, out, err = attnlab(capsys, "store", "relocate")
    assert code == 0 and out.startswith(f"relocated the MLflow store {store}"), err
    return store


def bundle_prediction(store: Path, text: str) -> str:
    """What the champion's own weights say for ``text``, read straight from its bundle files."""
    from attnlab.model.bundle import load_bundle
    from attnlab.model.predict import predict

    (bundle,) = store.glob("artifacts/attnlab-date/models/*/artifacts/artifacts/bundle")
    _, task, model = load_bundle(bundle)
    return predict(model, task, [text])[0].output


def test_an_old_store_loads_predicts_and_lists_its_run(old_store, capsys):
    code, out, err = attnlab(capsys, "predict", DATE)
    assert (code, out) == (0, f"{DATE} -> {bundle_prediction(old_store, DATE)}\n"), err

    code, out, err = attnlab(capsys, "runs")
    assert code == 0 and RUN[:8] in out, err


def test_an_old_store_promotes_on_its_fixed_benchmark_and_retrains(old_store, capsys):
    from attnlab.flows.retrain_flow import retrain_flow
    from attnlab.lab.config import ExperimentConfig

    code, out, err = attnlab(capsys, "train", *TINY_ARGS)
    assert code == 0, err
    assert f"run {BENCHMARK_RUN}" in out  # scored on the benchmark the old store fixed
    assert "model: attnlab-date version 2" in out

    state = retrain_flow(ExperimentConfig(**TINY), return_state=True)
    assert state.is_completed(), state.message
    versions = client_for(old_store).search_model_versions("name = 'attnlab-date'")
    assert sorted(int(v.version) for v in versions) == [1, 2, 3]
