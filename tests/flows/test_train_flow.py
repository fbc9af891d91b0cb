"""The train flow end to end against temporary SQLite stores: what a run logs, the registered
model and its champion alias, the pyfunc model, failures, interrupts, caching and retries."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pandas as pd
import pytest
import yaml
from _flowkit import KNOWN_DATES, LEARNS, TINY, client_for, point_at, run_flow
from mlflow.entities import RunStatus

from attnlab.data.datasets import data_spec, load_splits
from attnlab.flows.run import measure_steps
from attnlab.flows.run import steps as tasks
from attnlab.flows.tracking import registry as model_registry
from attnlab.flows.tracking import runs as tracking
from attnlab.flows.tracking import store as tracking_store
from attnlab.flows.tracking.errors import TrackingUnavailable
from attnlab.lab.config import ExperimentConfig
from mlflow import MlflowClient

pytestmark = pytest.mark.slow


def _artifacts(client, run_id: str, path: str | None = None) -> list[str]:
    found = []
    for item in client.list_artifacts(run_id, path):
        found.extend(_artifacts(client, run_id, item.path) if item.is_dir else [item.path])
    return found


def _run(store: Path, summary: dict):
    return client_for(store).get_run(summary["run_id"])


def test_run_has_every_config_field_as_param_tags_and_config_files(learned_store):
    store, summary = learned_store
    run = _run(store, summary)
    config = ExperimentConfig(**LEARNS)
    assert run.info.status == "FINISHED"
    computing = {"torch_threads", "omp_wait_policy", "gomp_spincount"}  # how the process computed, beside the config
    assert {key: value for key, value in run.data.params.items() if key not in computing} == tracking.config_params(config)
    assert set(run.data.params) == set(ExperimentConfig.model_fields) | computing
    assert int(run.data.params["torch_threads"]) >= 1
    assert {k: run.data.tags[k] for k in ("task", "scorer", "encoder", "decoder")} == {
        "task": "date",
        "scorer": "scaled_dot",
        "encoder": "gru",
        "decoder": "rnn",
    }
    assert run.data.tags["prefect.flow_run_id"] == summary["prefect_flow_run_id"] != ""
    client = client_for(store)
    saved = yaml.safe_load(Path(client.download_artifacts(run.info.run_id, "config/config.yaml")).read_text())
    assert ExperimentConfig(**saved) == config
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.name == "attnlab-date"
    assert experiment.artifact_location == (store / "artifacts" / "attnlab-date").as_uri()


def test_metric_histories_and_test_metrics(learned_store):
    store, summary = learned_store
    client, run_id = client_for(store), summary["run_id"]
    epochs = summary["epochs"]
    assert 1 <= epochs <= LEARNS["epochs"]
    for name in ("train_loss", "val_loss", "val_exact_match", "epoch_seconds", "samples_per_second"):
        assert [m.step for m in client.get_metric_history(run_id, name)] == list(range(1, epochs + 1)), name
    metrics = client.get_run(run_id).data.metrics
    for name in ("exact_match", "char_accuracy", "alignment_accuracy", "attention_entropy", "pad_attention_mass"):
        assert metrics[f"test_{name}"] == pytest.approx(summary["metrics"][f"test_{name}"])
    assert metrics["test_exact_match"] >= 0.9
    assert metrics["epochs_trained"] == epochs
    by_length = client.get_metric_history(run_id, "test_exact_match_by_length")
    assert by_length and all(0.0 <= m.value <= 1.0 for m in by_length)
    assert {"start_run", "data", "train", "evaluate", "explain", "plot", "explorer", "log", "register", "promote"} == set(
        summary["step_seconds"]
    )
    # the explanations: every cell of the logged table is a metric of the run and of its summary
    table = pd.read_json(Path(client.download_artifacts(run_id, "tables/explanations.json")), orient="split").set_index("explanation")
    assert list(table.index) == ["attention", "saliency", "input_x_gradient", "integrated_gradients"]
    assert metrics["test_explain_examples"] == 30 and "test_explain_attention_tau_attention" not in metrics
    for name in table.index:
        for measure in ("error_rate", "comprehensiveness", "sufficiency", "flip_top1"):
            assert metrics[f"test_explain_{name}_{measure}"] == pytest.approx(table.loc[name, measure])
            assert summary["metrics"][f"test_explain_{name}_{measure}"] == pytest.approx(table.loc[name, measure])


def test_artifacts_heatmaps_weights_tables_data(learned_store):
    store, summary = learned_store
    client, run_id = client_for(store), summary["run_id"]
    paths = set(_artifacts(client, run_id))
    pngs = sorted(p for p in paths if p.startswith("attention/") and p.endswith(".png"))
    assert pngs and {"attention/weights.json", "tables/per_length.json", "tables/predictions.json", "data/splits.csv"} <= paths
    assert Path(client.download_artifacts(run_id, pngs[0])).read_bytes().startswith(b"\x89PNG")
    records = json.loads(Path(client.download_artifacts(run_id, "attention/weights.json")).read_text())
    assert len(records) == len(pngs)
    for record in records:
        assert len(record["weights"]) == len(record["output_tokens"])
        assert all(len(row) == len(record["source_tokens"]) == len(record["source"]) for row in record["weights"])
        assert "".join(t for t in record["output_tokens"] if t != "<eos>") == record["prediction"]
    table = json.loads(Path(client.download_artifacts(run_id, "tables/predictions.json")).read_text())
    frame = pd.DataFrame(table["data"], columns=table["columns"])
    assert list(frame["correct"]) == sorted(frame["correct"])  # wrong ones first
    per_length = json.loads(Path(client.download_artifacts(run_id, "tables/per_length.json")).read_text())
    assert {"length", "count", "exact_match", "char_accuracy"} <= set(per_length["columns"])
    inputs = client.get_run(run_id).inputs.dataset_inputs
    contexts = {tag.value for i in inputs for tag in i.tags if tag.key == "mlflow.data.context"}
    assert contexts == {"train", "validation", "test"}
    assert {i.dataset.name for i in inputs} == {f"date-{s}-seed0" for s in ("train", "validation", "test")}


def test_model_is_registered_with_champion_alias(learned_store):
    store, summary = learned_store
    client = client_for(store)
    model = summary["model"]
    assert model["name"] == "attnlab-date" and model["champion"] is True
    version = client.get_model_version("attnlab-date", model["version"])
    assert version.run_id == summary["run_id"]
    assert float(version.tags["test_exact_match"]) == pytest.approx(summary["metrics"]["test_exact_match"])
    assert version.tags["scorer"] == "scaled_dot"
    assert str(client.get_registered_model("attnlab-date").aliases["champion"]) == model["version"]
    # A retried registration reuses the run's version instead of adding one.
    tracking_store.use_store(tracking_store.Store(f"sqlite:///{store / 'mlflow.db'}", store))
    again = model_registry.log_and_register_model(client, summary["run_id"], Path("unused"), ExperimentConfig(**LEARNS), 0.5, [])
    assert again == model["version"]
    assert float(client.get_model_version("attnlab-date", again).tags["test_exact_match"]) == 0.5
    client.set_model_version_tag("attnlab-date", again, "test_exact_match", version.tags["test_exact_match"])


def test_pyfunc_champion_predicts_the_right_strings(learned_store, tmp_path):
    import mlflow.pyfunc

    import mlflow
    from attnlab.model.bundle import load_bundle
    from attnlab.model.predict import predict

    store, summary = learned_store
    mlflow.set_tracking_uri(f"sqlite:///{store / 'mlflow.db'}")
    # Downloaded first: MLflow loading a models:/ URI of a local store in place writes a
    # registered_model_meta file into the store, which other tests read meanwhile.
    champion = mlflow.artifacts.download_artifacts("models:/attnlab-date@champion", dst_path=str(tmp_path / "champion"))
    loaded = mlflow.pyfunc.load_model(champion)
    sources = list(KNOWN_DATES)
    assert list(loaded.predict(pd.DataFrame({"source": sources}))) == list(KNOWN_DATES.values())
    # The same answers as attnlab.model.predict on the logged bundle, for other inputs too.
    version = f"models:/attnlab-date/{summary['model']['version']}"
    folder = Path(mlflow.artifacts.download_artifacts(version, dst_path=str(tmp_path / "version")))
    _, task, model = load_bundle(folder / "artifacts" / "bundle")
    others = ["31-01-2010", "29-02-2024", "09-09-2009"]
    assert list(loaded.predict(pd.DataFrame({"source": others}))) == [p.output for p in predict(model, task, others)]
    requirements = (folder / "requirements.txt").read_text()
    assert "torch==" in requirements and "attnlab==" in requirements


@pytest.fixture(scope="module")
def promotions(tmp_path_factory, prefect_harness) -> tuple[Path, dict, dict, dict]:
    """Three trains on one store: a first (learns nothing: exact match ~0), a better and a
    worse one. (store, first, better, worse summaries)."""
    store = tmp_path_factory.mktemp("promotions") / "mlflow"
    first = run_flow(store, **TINY)
    better = run_flow(store, **{**LEARNS, "explain_examples": 0})
    worse = run_flow(store, **{**TINY, "seed": 1})
    return store, first, better, worse


def test_champion_moves_only_to_a_better_model(promotions):
    store, first, better, worse = promotions
    assert first["model"]["champion"] and first["model"]["previous_champion"] is None
    assert better["model"]["champion"] is True
    assert better["model"]["previous_champion"]["version"] == first["model"]["version"]
    assert worse["model"]["champion"] is False and worse["model"]["champion_version"] == better["model"]["version"]
    client = client_for(store)
    assert str(client.get_registered_model("attnlab-date").aliases["champion"]) == better["model"]["version"]
    assert len(client.search_model_versions("name='attnlab-date'")) == 3


def test_promotion_scores_both_models_on_the_benchmark_and_records_the_decision(promotions):
    store, first, better, _ = promotions
    decision, benchmark = better["model"]["decision"], better["model"]["benchmark"]
    assert decision["promoted"] and decision["champion_version"] == first["model"]["version"]
    assert decision["challenger_score"] > decision["champion_score"]
    assert benchmark["run_id"] == first["model"]["benchmark"]["run_id"]  # drawn once per model
    client = client_for(store)
    tags = client.get_model_version("attnlab-date", better["model"]["version"]).tags
    assert tags["promotion.promoted"] == "true" and tags["promotion.command"] == "train"
    assert tags["promotion.run_id"] == better["run_id"] and float(tags["promotion.challenger_score"]) == decision["challenger_score"]
    run = client.get_run(better["run_id"]).data
    assert run.metrics["promoted"] == 1.0 and run.metrics["champion_score"] == decision["champion_score"]
    assert 0.0 <= run.metrics["benchmark_overlap"] < 1.0
    assert benchmark["size"] == 500  # the benchmark's examples, not the run's 100 test examples


def test_a_config_incomparable_with_the_benchmark_is_registered_but_not_promoted(tmp_path):
    store = tmp_path / "mlflow"
    first = run_flow(store, **{**TINY, "task": "reverse"})  # benchmark: lengths 5-20
    short = run_flow(store, **{**TINY, "task": "reverse", "task_options": {"max_length": 8}})
    decision = short["model"]["decision"]
    assert short["model"]["version"] == "2" and short["model"]["champion"] is False
    assert decision["promoted"] is False and decision["challenger_score"] is None
    assert decision["reason"].startswith("not comparable with the benchmark") and "at most 8" in decision["reason"]
    client = client_for(store)
    assert str(client.get_registered_model("attnlab-reverse").aliases["champion"]) == first["model"]["version"]
    assert client.get_model_version("attnlab-reverse", "2").tags["promotion.promoted"] == "false"


def test_interrupted_run_ends_killed_with_metrics_and_checkpoint(tmp_path, monkeypatch):
    store = tmp_path / "mlflow"
    champion = run_flow(store, **TINY)["model"]["version"]
    original = tracking.log_epoch

    def interrupt_at_epoch_2(client, run_id, metrics):
        original(client, run_id, metrics)
        if metrics["epoch"] == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(tasks.tracking, "log_epoch", interrupt_at_epoch_2)
    with pytest.raises(KeyboardInterrupt):
        run_flow(store, **{**TINY, "epochs": 4, "seed": 3})
    client = client_for(store)
    runs = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id], order_by=["start_time DESC"])
    killed = runs[0]
    assert killed.info.status == RunStatus.to_string(RunStatus.KILLED)
    assert [m.step for m in client.get_metric_history(killed.info.run_id, "train_loss")] == [1, 2]
    assert "checkpoint/checkpoint.pt" in _artifacts(client, killed.info.run_id)
    assert "KeyboardInterrupt" in killed.data.tags["attnlab.error"]
    assert str(client.get_registered_model("attnlab-date").aliases["champion"]) == champion
    assert len(client.search_model_versions("name='attnlab-date'")) == 1


def test_failed_run_ends_failed_and_keeps_what_it_logged(tmp_path, monkeypatch):
    def broken_evaluate(*args, **kwargs):
        raise RuntimeError("evaluation exploded")

    monkeypatch.setattr(measure_steps, "evaluate", broken_evaluate)
    with pytest.raises(RuntimeError, match="evaluation exploded"):
        run_flow(tmp_path / "mlflow", **TINY)
    client = client_for(tmp_path / "mlflow")
    (run,) = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id])
    assert run.info.status == "FAILED"
    assert run.data.tags["attnlab.error"] == "RuntimeError: evaluation exploded"
    assert len(client.get_metric_history(run.info.run_id, "train_loss")) == TINY["epochs"]
    assert run.data.params["hidden_size"] == "16"
    assert client.search_registered_models() == []


def test_unreachable_tracking_server_fails_before_training(monkeypatch):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(tasks, "train_model", lambda *a, **k: pytest.fail("training started"))
    from attnlab.flows.run.train_flow import train_flow

    with pytest.raises(TrackingUnavailable, match=f"cannot reach the MLflow tracking store http://127.0.0.1:{port}"):
        train_flow(ExperimentConfig(**TINY))


def test_data_generation_is_cached_on_its_inputs_and_passed_as_a_file():
    from prefect import flow

    config = ExperimentConfig(train_size=30, validation_size=10, test_size=10, seed=123)
    spec = data_spec(config)
    assert data_spec(config.model_copy(update={"hidden_size": 7, "scorer": "dot"})) == spec

    @flow
    def once(plugin: str):
        return tasks.generate_data(spec, plugin)

    first = once("attnlab test")
    written = first.stat().st_mtime_ns
    assert once("attnlab test") == first and first.stat().st_mtime_ns == written  # kept, not generated again
    assert first.parent == tasks.cache_dir()
    assert once("attnlab test 2.0") != first  # another plugin version: other data
    splits = load_splits(first)
    assert [len(part) for _, part in splits.items()] == [30, 10, 10]
    assert splits.train[0].alignment and isinstance(splits.train[0].alignment[0], tuple)


def test_test_task_options_change_the_data():
    from prefect import flow

    from attnlab.flows.run.steps import dataset

    base = dict(task="reverse", train_size=20, validation_size=5, test_size=5, task_options={"min_length": 3, "max_length": 5})
    plain = ExperimentConfig(**base)
    longer = ExperimentConfig(**base, test_task_options={"min_length": 8, "max_length": 9})
    paths = flow(lambda: (dataset(plain), dataset(longer)), name="two-datasets")()
    assert paths[0] != paths[1]
    assert max(len(ex.source) for ex in load_splits(paths[0]).test) <= 5
    assert min(len(ex.source) for ex in load_splits(paths[1]).test) >= 8


def test_a_deleted_data_file_is_generated_again():
    from prefect import flow

    from attnlab.flows.run.steps import dataset

    config = ExperimentConfig(**{**TINY, "seed": 99})
    first = flow(lambda: dataset(config), name="data-once")()
    first.unlink()
    again = flow(lambda: dataset(config), name="data-again")()
    assert again == first and again.exists()


def test_logging_step_retries_a_transient_failure(monkeypatch, tmp_path):
    from prefect import flow

    calls = []

    def flaky(client, run_id, evaluation, extra):
        calls.append(run_id)
        if len(calls) == 1:
            raise OSError("disk hiccup")

    monkeypatch.setattr(tasks.tracking, "log_evaluation", flaky)
    monkeypatch.setattr(tasks.tracking, "log_folder", lambda *a: None)

    @flow
    def log_once():
        tasks.log_results("run-1", None, tmp_path, {})

    log_once()
    assert calls == ["run-1", "run-1"]

    def buggy(client, run_id, evaluation, extra):
        calls.append(run_id)
        raise KeyError("a bug is not retried")

    monkeypatch.setattr(tasks.tracking, "log_evaluation", buggy)
    calls.clear()
    with pytest.raises(KeyError):
        log_once()
    assert calls == ["run-1"]


def test_store_location_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("ATTNLAB_MLFLOW_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    where = tracking_store.resolve_store()
    assert where.tracking_uri == f"sqlite:///{tmp_path / 'mlflow' / 'mlflow.db'}"
    assert where.artifact_root == tmp_path / "mlflow" / "artifacts"
    point_at(tmp_path / "elsewhere", monkeypatch)
    assert tracking_store.resolve_store().folder == tmp_path / "elsewhere"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    assert tracking_store.resolve_store() == tracking_store.Store("http://127.0.0.1:5999")


def test_the_embedded_store_stays_embedded_after_use(monkeypatch, tmp_path):
    """mlflow.set_tracking_uri exports MLFLOW_TRACKING_URI; the store (and child processes, which
    inherit it) must still put artifacts under <dir>/artifacts, not ./mlruns."""
    monkeypatch.chdir(tmp_path)
    point_at(tmp_path / "store", monkeypatch)
    first = tracking_store.use_store()
    assert os.environ["MLFLOW_TRACKING_URI"] == first.tracking_uri
    assert tracking_store.resolve_store() == first and first.folder == tmp_path / "store"
    client = MlflowClient()
    experiment_id = tracking.ensure_experiment(client, "placed", tracking_store.resolve_store())
    assert client.get_experiment(experiment_id).artifact_location == (tmp_path / "store" / "artifacts" / "placed").as_uri()
    assert not (tmp_path / "mlruns").exists()
