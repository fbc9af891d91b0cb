"""Bad values refused before anything starts (ports, experiment names, devices, overlong inputs),
and a diverging training ending with one line, its run FAILED and nothing registered."""

from __future__ import annotations

import re

import pytest
import torch
from _flowkit import TINY, assert_one_line_error, client_for, is_phase_line, is_progress_line, spelled_words

from attnlab.flows.cli import app as cli

#: One year of dates (365 values) in small splits: room for them, not for a 500-example benchmark.
ONE_YEAR = ["-o", "task.min_year=2023", "-o", "task.max_year=2023", "--train-size", "50", "-o", "validation_size=10", "-o", "test_size=10"]
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")


def attnlab(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def attnlab_lines(err: str) -> list[str]:
    """What attnlab said on stderr: Prefect's own INFO lines (an in-process run under the test
    harness shows them) and phase lines left out."""
    return [
        line for line in err.splitlines() if line.strip() and not re.match(r"\d\d:\d\d:\d\d\.\d+ \| ", line) and not is_phase_line(line)
    ]


@pytest.fixture
def bundle(tmp_path):
    """A tiny untrained date model on disk."""
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(hidden_size=8, embedding_dim=8)
    return save_bundle(tmp_path / "bundle", config, build_model(config, build_task(config)))


@pytest.mark.parametrize(
    "args, needles",
    [
        (["ui", "--port", "70000"], ["Invalid value for '--port'", "65535"]),  # was a 34-line OverflowError
        (["ui", "--port", "0"], ["Invalid value for '--port'", "greater than or equal to 1"]),
        (["server", "--prefect-port", "70000"], ["Invalid value for '--prefect-port'", "65535"]),
        (["server", "--mlflow-port", "-1"], ["Invalid value for '--mlflow-port'"]),
        (["sweep", "--scorer", "dot", "--experiment", "../../escape_exp"], ["--experiment '../../escape_exp'", "letters, digits"]),
        (["schedule", "--cron", "0 3 * * *", "--experiment", "../x"], ["--experiment '../x'", "letters, digits"]),
        (["sweep", "--scorer", "dot", "--register", *ONE_YEAR], ["dot/gru/rnn on date: the registered model's benchmark takes 500", "365"]),
        (
            ["schedule", "--cron", "0 3 * * *", *ONE_YEAR],
            ["benchmark takes 500 distinct examples", "at most 365 (attnlab schedule --benchmark-size)"],
        ),
        pytest.param(["sweep", "--scorer", "dot", "-o", "device=cuda"], ["device 'cuda' is not available"], marks=NO_CUDA),
        pytest.param(["schedule", "--cron", "0 3 * * *", "--device", "cuda"], ["device 'cuda' is not available"], marks=NO_CUDA),
    ],
)
def test_refused_before_anything_starts(capsys, empty_store, args, needles):
    code, out, err = attnlab(capsys, *args)
    assert code == 2 and out == ""
    assert_one_line_error(err, *needles)
    assert not empty_store.exists()


def test_experiment_outside_the_store_writes_nothing(capsys, empty_store, tmp_path):
    code, _, err = attnlab(capsys, "train", "--experiment", "../../escape_exp")
    assert code == 2
    assert_one_line_error(err, "--experiment '../../escape_exp'", "letters, digits, '-', '_' and '.'")
    assert not empty_store.exists() and not list(tmp_path.rglob("escape_exp"))


def test_predict_refuses_an_input_longer_than_the_tasks_sources(capsys, bundle):
    code, out, err = attnlab(capsys, "predict", "25-12-2023" * 1000, "--model", str(bundle))  # it decoded for over 300 s
    assert code == 2 and out == ""
    assert_one_line_error(err, "has 10000 characters; this task's sources have at most 10")
    code, out, _ = attnlab(capsys, "predict", "25-12-2023", "--model", str(bundle))
    assert code == 0 and out.startswith("25-12-2023 -> ")


def test_served_model_answers_an_overlong_input_with_a_short_error(bundle):
    import pandas as pd
    from mlflow.exceptions import MlflowException
    from mlflow.pyfunc import PythonModelContext

    from attnlab.flows.pyfunc import BUNDLE, AttnlabModel

    context = PythonModelContext(artifacts={BUNDLE: str(bundle)}, model_config=None)
    model = AttnlabModel()
    model.load_context(context)
    with pytest.raises(MlflowException, match=r"has 10000 characters; this model's task has sources of at most 10$") as caught:
        model.predict(context, pd.DataFrame({"source": ["25-12-2023", "25-12-2023" * 1000]}))
    assert caught.value.error_code == "INVALID_PARAMETER_VALUE" and len(str(caught.value)) < 200
    assert len(model.predict(context, pd.DataFrame({"source": ["25-12-2023"]}))) == 1


@pytest.mark.slow
def test_a_diverging_training_ends_with_one_line_and_a_failed_run(capsys, empty_store):
    """Learning rate 1e30: losses near 1e32, never NaN; the run once registered a garbage model."""
    options = [f"-o{key}={value}" for key, value in TINY.items()]
    code, out, err = attnlab(capsys, "train", *options, "--learning-rate", "1e30")
    assert code == 1 and out == ""
    # What attnlab says (Prefect's own INFO lines aside, which an in-process run under the test
    # harness shows): its header, progress inside the first epoch, then one error line.
    lines = attnlab_lines(err)
    assert lines[0].startswith("training scaled_dot/gru/rnn on date"), err
    assert "Traceback" not in err and all(is_progress_line(line) for line in lines[1:-1]), err  # Prefect printed two tracebacks
    assert lines[-1].startswith("attnlab: error: training diverged: loss grew to ")
    assert "over 1000x the first one" in lines[-1] and lines[-1].endswith("lower the learning rate")
    client = client_for(empty_store)
    (run,) = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id])
    assert run.info.status == "FAILED"
    assert client.search_registered_models() == []


@pytest.mark.slow
def test_a_task_too_small_for_the_benchmark_is_one_line_before_training_and_the_run_failed(capsys, empty_store):
    """One year of dates has 365 values, fewer than the 500 of the benchmark that the first
    promotion draws: refused before training (it trained, registered a version, then printed a
    traceback at the promotion), the run FAILED with the reason, nothing registered."""
    options = [f"-o{key}={value}" for key, value in TINY.items()]
    code, out, err = attnlab(capsys, "train", *options, "-otask.min_year=2023", "-otask.max_year=2023")
    assert code == 2 and out == ""
    lines = attnlab_lines(err)
    assert lines[0].startswith("training scaled_dot/gru/rnn on date") and "Traceback" not in err, err
    assert all(is_progress_line(line) and not line.startswith("epoch ") for line in lines[:-1]), err  # refused before training
    assert lines[-1].startswith(
        "attnlab: error: the registered model's benchmark takes 500 distinct examples, but task DateTask has only 365"
    )
    client = client_for(empty_store)
    (run,) = client.search_runs([client.get_experiment_by_name("attnlab-date").experiment_id])
    assert run.info.status == "FAILED" and "benchmark takes 500" in run.data.tags["attnlab.error"]
    assert "train_loss" not in run.data.metrics and client.search_registered_models() == []


@pytest.mark.slow
def test_a_test_split_smaller_than_the_benchmark_is_one_line_and_the_run_failed(capsys, empty_store, tmp_path):
    """A file's registered model keeps its benchmark in the test split, so a train asking for
    fewer test sources than it holds is refused in one line with exit 2 (it printed a 40-line
    traceback with exit 1), and its run ends FAILED with the reason."""
    words = tmp_path / "words.csv"
    words.write_text(spelled_words(200))
    options = ["--task", "pairs", f"-otask.path={words}", "-otask.source_column=word", "-otask.target_column=spelled",
               "-otask.target_tokenization=whitespace", "--epochs", "1", "--hidden-size", "16", "--embedding-dim", "8",
               "-oexplain_examples=0"]  # fmt: skip
    code, _, err = attnlab(capsys, "train", *options)
    assert code == 0, err
    code, out, err = attnlab(capsys, "train", *options, "-otest_size=5")
    assert code == 2 and out == ""
    lines = attnlab_lines(err)
    assert "Traceback" not in err and lines[-1].startswith("attnlab: error: test = 5 sources, but the registered model's benchmark has "), (
        err
    )
    assert lines[-1].endswith("or more, or register the run under another name (--model-name)"), lines[-1]
    client = client_for(empty_store)
    experiment = client.get_experiment_by_name("attnlab-pairs-words")
    failed = client.search_runs([experiment.experiment_id], "attributes.status = 'FAILED'")
    assert len(failed) == 1 and "register the run under another name" in failed[0].data.tags["attnlab.error"]
