"""Checkpoints and bundles load weights-only: a crafted pickle runs no code and is refused in one
line; a real checkpoint (optimizer, schedule, history, RNG state) still resumes."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.bundle import RefusedFile, load_bundle, save_bundle
from attnlab.training.experiment import run_experiment

TINY = dict(hidden_size=7, embedding_dim=5, train_size=64, validation_size=16, test_size=16, batch_size=32, epochs=1)

#: Written by another interpreter, as an attacker would: unpickling it creates ``marker``.
CRAFT = """
import os, sys, torch

class Payload:
    def __reduce__(self):
        return (os.system, ("touch " + sys.argv[2],))

torch.save({"config": {}, "model": Payload(), "optimizer": {}, "schedule": {}, "history": [],
            "train_seconds": 0.0, "rng": torch.get_rng_state()}, sys.argv[1])
"""


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> tuple[Path, Path]:
    """A crafted torch file (written once for the module: another interpreter takes seconds to
    start) and the file its unpickling would create."""
    folder = tmp_path_factory.mktemp("crafted")
    path, marker = folder / "crafted.pt", folder / "code-ran"
    subprocess.run([sys.executable, "-c", textwrap.dedent(CRAFT), str(path), str(marker)], check=True)
    return path, marker


def craft(crafted: tuple[Path, Path], tmp_path: Path, name: str) -> tuple[Path, Path]:
    """The crafted file copied to ``tmp_path/name``, and the file its unpickling would create."""
    path = tmp_path / name
    shutil.copyfile(crafted[0], path)
    return path, crafted[1]


def test_crafted_checkpoint_runs_no_code_and_is_refused_in_one_line(crafted, tmp_path):
    checkpoint, marker = craft(crafted, tmp_path, "checkpoint.pt")
    with pytest.raises(RefusedFile) as caught:
        run_experiment(ExperimentConfig(**TINY), checkpoint=checkpoint)
    assert not marker.exists()
    message = str(caught.value)
    assert "\n" not in message and str(checkpoint) in message and "posix.system" in message
    assert isinstance(caught.value, ValueError)  # callers catching the old ValueError still do


def test_crafted_bundle_weights_are_refused_in_one_line(crafted, tmp_path):
    config = ExperimentConfig(**TINY)
    folder = save_bundle(tmp_path / "bundle", config, build_model(config, build_task(config)))
    weights, marker = craft(crafted, tmp_path, "weights.pt")
    weights.replace(folder / "weights.pt")
    with pytest.raises(RefusedFile, match="refusing to load .*weights.pt: it would import posix.system") as caught:
        load_bundle(folder)
    assert not marker.exists() and "\n" not in str(caught.value)


def test_a_file_that_is_no_checkpoint_is_one_line(tmp_path):
    junk = tmp_path / "checkpoint.pt"
    junk.write_bytes(b"not a torch file")
    with pytest.raises(RefusedFile, match="is not a torch file") as caught:
        run_experiment(ExperimentConfig(**TINY), checkpoint=junk)
    assert "\n" not in str(caught.value)
    torch.save({"model": {}}, junk)
    with pytest.raises(RefusedFile, match="is not an attnlab checkpoint .*optimizer"):
        run_experiment(ExperimentConfig(**TINY), checkpoint=junk)


def test_real_checkpoint_loads_weights_only_and_resumes(tmp_path):
    checkpoint = tmp_path / "checkpoint.pt"
    config = ExperimentConfig(**{**TINY, "epochs": 2, "lr_schedule": "cosine", "target_exact_match": None})

    def stop_after_one(metrics):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_experiment(config, on_epoch=stop_after_one, checkpoint=checkpoint)
    torch.load(checkpoint, weights_only=True)  # optimizer, schedule, history and RNG: all plain
    epochs = []
    run_experiment(config, on_epoch=lambda m: epochs.append(m["epoch"]), checkpoint=checkpoint)
    assert epochs == [2]
