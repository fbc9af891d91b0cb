"""`attnlab predict --model FOLDER` on a damaged bundle: one line naming the file and what is
wrong with it (missing, not JSON, does not match the weights), exit status 2, no traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _flowkit import assert_one_line_error

from attnlab.flows.cli.app import main


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """An untrained tiny date model saved as a bundle folder."""
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(hidden_size=8, embedding_dim=8)
    return save_bundle(tmp_path_factory.mktemp("saved") / "bundle", config, build_model(config, build_task(config)))


def only_config(folder: Path) -> list[str]:
    (folder / "vocab.json").unlink()
    (folder / "weights.pt").unlink()
    return ["vocab.json, weights.pt missing"]


def vocab_not_json(folder: Path) -> list[str]:
    (folder / "vocab.json").write_text("{not json")
    return [f"{folder / 'vocab.json'} is not JSON"]


def hidden_size_edited(folder: Path) -> list[str]:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 16}))
    return [f"{folder / 'config.json'} does not match {folder / 'weights.pt'}", "[24, 8] in the weights but [48, 8]"]


def vocab_lost_entries(folder: Path) -> list[str]:
    vocab = json.loads((folder / "vocab.json").read_text())
    (folder / "vocab.json").write_text(json.dumps({**vocab, "target": vocab["target"][:-2]}, ensure_ascii=False))
    return [
        f"{folder / 'vocab.json'} does not match {folder / 'weights.pt'}",
        "it lists 11 target characters, the weights were trained with 13",
    ]


@pytest.mark.parametrize("damage", [only_config, vocab_not_json, hidden_size_edited, vocab_lost_entries])
def test_a_damaged_bundle_is_one_line_naming_the_file(saved, tmp_path, capsys, damage):
    folder = Path(shutil.copytree(saved, tmp_path / "bundle"))
    needles = damage(folder)
    assert main(["predict", "--model", str(folder), "25-12-2023"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert_one_line_error(err, *needles)


def test_the_undamaged_bundle_predicts(saved, capsys):
    assert main(["predict", "--model", str(saved), "25-12-2023"]) == 0
    assert capsys.readouterr().out.startswith("25-12-2023 -> ")
