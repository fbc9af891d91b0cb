"""A third-party scorer, shipped as its own distribution, is found, listed and trains,
with no change to attnlab."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from attnlab.lab.config import ExperimentConfig
from attnlab.plugins import attention, describe_plugins, list_plugins, load_plugin
from attnlab.plugins.testing import check_scorer
from attnlab.training.experiment import run_experiment

pytestmark = pytest.mark.slow  # it trains, and starts attnlab train


def documented_cosine() -> str:
    """The worked scorer of the attention contract's docstring (the README shows the same one)."""
    block = attention.__doc__.split("::\n\n", 1)[1].split("\n\nDeclared", 1)[0]
    return textwrap.dedent(block)


def test_cosine_scorer_from_another_distribution_trains(make_distribution):
    make_distribution(
        "thirdparty-cosine",
        {"attnlab.scorers": {"cosine": "thirdparty_cosine:CosineAttention"}},
        {"thirdparty_cosine.py": documented_cosine()},
    )
    assert "cosine" in list_plugins("scorers")
    (info,) = [i for i in describe_plugins("scorers") if i.name == "cosine"]
    assert info.distribution == "thirdparty-cosine 1.0"
    cosine = load_plugin("scorers", "cosine")
    assert cosine.__name__ == "CosineAttention"
    check_scorer(cosine)
    check_scorer(cosine, temperature=5)  # an option, YAML-typed (an int here)

    config = ExperimentConfig(
        scorer="cosine",
        scorer_options={"temperature": 10},
        hidden_size=64,
        embedding_dim=32,
        train_size=2000,
        validation_size=100,
        test_size=200,
        epochs=4,
        batch_size=64,
        target_exact_match=None,
    )
    result = run_experiment(config)
    first, last = result.training.history[0], result.training.history[-1]
    assert last["train_loss"] < first["train_loss"] / 2
    assert result.evaluation.metrics["char_accuracy"] > 0.9
    assert result.evaluation.metrics["pad_attention_mass"] == 0.0


# --------------------------------------------------------------------------- a broken one

TRANSPOSED = '''
from attnlab.plugins import Attention

class TransposedAttention(Attention):
    """score() returns [B, Lk, Lq] instead of [B, Lq, Lk]."""

    def score(self, query, keys):
        return keys @ query.transpose(1, 2)
'''


@pytest.fixture
def transposed(make_distribution) -> Path:
    return make_distribution(
        "thirdparty-transposed",
        {"attnlab.scorers": {"transposed": "thirdparty_transposed:TransposedAttention"}},
        {"thirdparty_transposed.py": TRANSPOSED},
    )


def _environ(process: psutil.Process) -> dict[str, str]:
    try:
        return process.environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return {}


def test_broken_scorer_stops_attnlab_train_before_training_in_one_line(transposed, tmp_path):
    env = {key: value for key, value in os.environ.items() if key != "MLFLOW_TRACKING_URI"}
    env.update(PYTHONPATH=str(transposed), ATTNLAB_CACHE_DIR=str(tmp_path / "cache"))
    console = str(Path(sys.executable).with_name("attnlab"))
    started = time.perf_counter()
    done = subprocess.run([console, "train", "--scorer", "transposed"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - started
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""  # no "training ..." line: nothing started
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith(
        "attnlab: error: scorer 'transposed' (thirdparty_transposed:TransposedAttention, from thirdparty-transposed 1.0): "
        "score(query [3, 2, 128], keys [3, 5, 128]): expected a tensor of shape [B, Lq, Lk] = [3, 2, 5], got [3, 5, 2]"
    ), lines[0]
    # No store, no data, no checkpoint: the cache holds at most the log of Prefect's temporary
    # server, launched as soon as the command line was read and stopped with the command.
    assert not (tmp_path / "mlflow").exists()
    cache = tmp_path / "cache"
    assert [p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()] in ([], ["logs/prefect-server.log"])
    assert [p.pid for p in psutil.process_iter() if _environ(p).get("ATTNLAB_CACHE_DIR") == str(cache)] == []
    assert seconds < 60, seconds  # imports and the check only (a few seconds), not a training run


def test_every_model_build_probes_a_scorer_that_is_new_to_the_process(make_distribution, transposed):
    """Models are probed once per config and plugin class in a process; a broken scorer is
    refused by every build, and a scorer name that now points at a broken class (an upgraded
    plugin in a long-running server) is probed again."""
    from attnlab.model.assembly import build_model, build_task
    from attnlab.plugins import PluginContractError

    tiny = dict(hidden_size=8, embedding_dim=4, train_size=20, validation_size=5, test_size=5)
    broken = ExperimentConfig(scorer="transposed", **tiny)
    for _ in range(2):
        with pytest.raises(PluginContractError, match="got \\[3, 5, 2\\]"):
            build_model(broken, build_task(broken))

    good = make_distribution(
        "thirdparty-swap", {"attnlab.scorers": {"swap": "thirdparty_cosine:CosineAttention"}}, {"thirdparty_cosine.py": documented_cosine()}
    )
    config = ExperimentConfig(scorer="swap", **tiny)
    build_model(config, build_task(config))
    sys.path.remove(str(good))
    make_distribution("thirdparty-swap2", {"attnlab.scorers": {"swap": "thirdparty_transposed:TransposedAttention"}}, {})
    with pytest.raises(PluginContractError, match="got \\[3, 5, 2\\]"):
        build_model(config, build_task(config))


def test_plugins_check_marks_the_broken_scorer(transposed, capsys):
    from attnlab.flows.cli import app as cli

    code = cli.main(["plugins", "--check"])
    out = capsys.readouterr().out
    assert code == 1
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert "thirdparty-transposed 1.0  BROKEN: scorer 'transposed' (thirdparty_transposed:TransposedAttention" in rows["transposed"]
    assert "got [3, 5, 2] (transposed?)" in rows["transposed"]
    assert rows["scaled_dot"].endswith("attnlab.plugins.builtin.scorers:ScaledDotAttention  ok")
    assert all(rows[name].endswith("  ok") for name in ("gru", "rnn", "transformer", "date", "reverse"))
    assert out.splitlines()[-1] == "1 broken plugin(s)"

    assert cli.main(["plugins"]) == 0  # without --check: listed as loadable, not probed
    assert "BROKEN" not in capsys.readouterr().out
