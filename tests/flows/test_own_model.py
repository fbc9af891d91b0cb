"""A model trained on a user's file is self-contained: with the file deleted, ``attnlab predict``,
``mlflow.pyfunc.load_model`` and ``mlflow models serve`` in fresh processes still predict. Two files
are two registered models, each with its own benchmark drawn from its own test split, and a
model accepts sources a little longer than its longest (1.5x), not far longer."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from _flowkit import client_for, free_port, point_at, post, server_answers, spelled_words, stop_group, wait_until

from attnlab.flows.cli.app import main
from attnlab.flows.tracking.benchmark_store import BENCHMARK_RUN_TAG

ATTNLAB = str(Path(sys.executable).with_name("attnlab"))


def train(path: Path, *extra: str) -> tuple[dict, str]:
    """``attnlab train`` on the pairs file ``path`` (tiny, one epoch): (its JSON summary, its stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["train", "--task", "pairs", f"-otask.path={path}", "-otask.source_column=word", "-otask.target_column=spelled",
                     "-otask.target_tokenization=whitespace", "--epochs", "1", "--hidden-size", "16", "-oembedding_dim=8", "-oexplain_examples=0", "--json",
                     *extra])  # fmt: skip
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue()), err.getvalue()


@pytest.fixture(scope="module")
def two_files(tmp_path_factory, prefect_harness):
    """A store with a model of lexicon.csv and one of other.tsv; lexicon.csv then deleted.
    (store, env of a fresh process on that store, the two summaries, the stderr of the first)."""
    root = tmp_path_factory.mktemp("own-model")
    lexicon, other = root / "lexicon.csv", root / "other.tsv"
    lexicon.write_text(spelled_words(300))
    other.write_text(spelled_words(200, seed=1).replace(",", "\t"))
    with pytest.MonkeyPatch.context() as patch:
        store = point_at(root / "mlflow", patch)
        first, first_err = train(lexicon)
        second, _ = train(other)
    lexicon.unlink()
    env = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "ATTNLAB_MLFLOW_DIR")}
    env.update(ATTNLAB_MLFLOW_DIR=str(store), MLFLOW_TRACKING_URI=f"sqlite:///{store / 'mlflow.db'}")
    return store, env, (first, second), first_err


@pytest.mark.slow
def test_each_file_has_its_own_model_experiment_and_benchmark_split_80_10_10(two_files):
    store, _, (first, second), err = two_files
    assert (first["model"]["name"], second["model"]["name"]) == ("attnlab-pairs-lexicon", "attnlab-pairs-other")
    assert (first["experiment"], second["experiment"]) == ("attnlab-pairs-lexicon", "attnlab-pairs-other")
    assert first["model"]["champion"] and second["model"]["champion"]  # each the first champion of its own model
    client = client_for(store)
    benchmarks = {
        name: client.get_registered_model(name).tags[BENCHMARK_RUN_TAG] for name in ("attnlab-pairs-lexicon", "attnlab-pairs-other")
    }
    assert len(set(benchmarks.values())) == 2
    assert "(240/30/30 examples" in err  # 80/10/10 of the file's 300 sources
    assert "data: lexicon.csv: 300 rows read, 300 kept" in err


@pytest.mark.slow
def test_predict_needs_no_training_file_in_a_fresh_process(two_files):
    _, env, (first, _), _ = two_files
    done = subprocess.run([ATTNLAB, "predict", "--model-name", "attnlab-pairs-lexicon", "abc", "edcba"], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [line.split(" -> ")[0] for line in done.stdout.splitlines()] == ["abc", "edcba"]
    foreign = subprocess.run([ATTNLAB, "predict", "--model-name", "attnlab-pairs-lexicon", "abz"], env=env,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert foreign.returncode == 2 and "'abz' has character(s) 'z' outside this task's alphabet 'abcde'" in foreign.stderr


@pytest.mark.slow
def test_a_source_up_to_one_and_a_half_times_the_longest_is_taken_and_longer_refused(two_files):
    _, env, _, _ = two_files
    # The longest word of the file has 7 letters: 10 are taken, 11 refused.
    done = subprocess.run([ATTNLAB, "predict", "--model-name", "attnlab-pairs-lexicon", "abcdeabcde"], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    refused = subprocess.run([ATTNLAB, "predict", "--model-name", "attnlab-pairs-lexicon", "abcdeabcdea"], env=env,
                             capture_output=True, text=True, timeout=600)  # fmt: skip
    assert refused.returncode == 2 and "'abcdeabcdea' has 11 characters; this task's sources have at most 10" in refused.stderr


@pytest.mark.slow
def test_pyfunc_load_model_needs_no_training_file_in_a_fresh_process(two_files):
    _, env, _, _ = two_files
    script = "import mlflow.pyfunc; print(mlflow.pyfunc.load_model('models:/attnlab-pairs-lexicon@champion').predict(['abc', 'de']))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(eval(done.stdout.strip())) == 2  # noqa: S307  a list of two strings, printed by the child


@pytest.mark.slow
def test_mlflow_models_serve_needs_no_training_file(two_files, tmp_path):
    _, env, _, _ = two_files
    port = free_port()
    env = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}
    command = [sys.executable, "-m", "mlflow", "models", "serve", "-m", "models:/attnlab-pairs-lexicon@champion",
               "--env-manager", "local", "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    with open(tmp_path / "serve.log", "wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        wait_until(lambda: server_answers(f"http://127.0.0.1:{port}/ping", server), 600, "the server answers")
        body = json.dumps({"dataframe_split": {"columns": ["source"], "data": [["abc"], ["dd"]]}}).encode()
        status, text = post(f"http://127.0.0.1:{port}/invocations", body, timeout=120)
        assert status == 200, text
        assert len(json.loads(text)["predictions"]) == 2
    finally:
        stop_group(server)
