"""A damaged bundle folder is refused by :func:`attnlab.model.bundle.load_bundle` in one sentence
naming the file at fault: missing, not JSON, not a config or vocabulary, or a config or
vocabulary that does not match the weights (which one, and how)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.model.bundle import DamagedBundle, load_bundle, save_bundle


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """An untrained tiny date model (hidden 7, embedding 5) saved as a bundle."""
    config = ExperimentConfig(hidden_size=7, embedding_dim=5)
    return save_bundle(tmp_path_factory.mktemp("saved") / "bundle", config, build_model(config, build_task(config)))


@pytest.fixture
def bundle(saved, tmp_path) -> Path:
    """A copy of the saved bundle to damage."""
    return Path(shutil.copytree(saved, tmp_path / "bundle"))


def edit_json(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}, ensure_ascii=False))


def refusal(folder: Path) -> str:
    with pytest.raises(DamagedBundle) as caught:
        load_bundle(folder)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_saved_bundle_loads(bundle):
    config, _, model = load_bundle(bundle)
    assert config.hidden_size == 7 and not model.training


@pytest.mark.parametrize("kept", [["config.json"], ["config.json", "weights.pt"], []])
def test_missing_files_are_named(bundle, kept):
    for path in bundle.iterdir():
        if path.name not in kept:
            path.unlink()
    message = refusal(bundle)
    missing = [name for name in ("config.json", "vocab.json", "weights.pt") if name not in kept]
    assert str(bundle) in message and f"{', '.join(missing)} missing" in message


@pytest.mark.parametrize("name", ["config.json", "vocab.json"])
@pytest.mark.parametrize("text", [b"{not json", b"\xff\xfe binary"])
def test_a_file_that_is_not_json_is_named(bundle, name, text):
    (bundle / name).write_bytes(text)
    message = refusal(bundle)
    assert f"{bundle / name} is not JSON" in message


@pytest.mark.parametrize(
    "vocab",
    [
        [],
        {"source": "0123"},
        {"source": ["0", 1], "target": "01"},
        {"source": "0012", "target": "01"},
        {"source": "0123", "target": ["AA", "AA"]},
        {"source": "0123", "target": ["AA", ""]},
    ],  # fmt: skip
)
def test_a_vocab_json_that_is_no_vocabulary_is_named(bundle, vocab):
    (bundle / "vocab.json").write_text(json.dumps(vocab))
    assert f"{bundle / 'vocab.json'} is not a vocabulary" in refusal(bundle)


def test_a_config_json_that_is_no_config_is_named(bundle):
    edit_json(bundle / "config.json", hidden_size="wide")
    message = refusal(bundle)
    assert f"{bundle / 'config.json'} is not a valid attnlab config" in message and "'wide'" in message


@pytest.mark.parametrize(
    "field,value,tensor", [("hidden_size", 9, "encoder."), ("embedding_dim", 6, "encoder.embedding"), ("scorer", "general", "decoder.")]
)
def test_a_config_that_does_not_match_the_weights_is_named(bundle, field, value, tensor):
    edit_json(bundle / "config.json", **{field: value})
    message = refusal(bundle)
    assert f"{bundle / 'config.json'} does not match {bundle / 'weights.pt'}" in message
    assert f"tensor {tensor}" in message and "vocab.json" not in message.split(": ", 1)[1]


@pytest.mark.parametrize("side,other", [("target", "source"), ("source", "target")])
def test_a_vocabulary_that_lost_characters_is_named_with_both_counts(bundle, side, other):
    vocab = json.loads((bundle / "vocab.json").read_text())
    edit_json(bundle / "vocab.json", **{side: vocab[side][:-2]})
    message = refusal(bundle)
    assert f"{bundle / 'vocab.json'} does not match {bundle / 'weights.pt'}" in message
    assert f"it lists {len(vocab[side]) - 2} {side} characters, the weights were trained with {len(vocab[side])}" in message
    said = message.split(": ", 1)[1]  # what follows the file names
    assert other not in said and "config.json" not in said


def test_weights_that_are_no_model_are_named(bundle):
    import torch

    torch.save([1, 2, 3], bundle / "weights.pt")
    assert f"{bundle / 'weights.pt'} does not hold a model's weights" in refusal(bundle)


def test_read_bundle_checks_the_json_files_without_torch(bundle, tmp_path):
    """The check :func:`read_bundle` makes before a model loads does not import torch."""
    import subprocess
    import sys

    (bundle / "vocab.json").write_text("{not json")
    script = (
        "import sys\nfrom attnlab.model.bundle import DamagedBundle, read_bundle\n"
        f"try:\n    read_bundle({str(bundle)!r})\nexcept DamagedBundle as exc:\n    print(exc)\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.stdout.splitlines()[-2:] == [
        f"{bundle / 'vocab.json'} is not JSON (Expecting property name enclosed in double quotes at line 1 column 2); restore the file saved with the model",
        "False",
    ], done.stderr
