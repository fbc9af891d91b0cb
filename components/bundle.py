"""A trained model on disk: its config, vocabularies and weights in one folder.

The folder holds ``config.json``, ``vocab.json`` and ``weights.pt``; it is what checkpoints,
the MLflow model and ``attnlab predict`` load.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from attnlab.config import ExperimentConfig
from attnlab.model import Seq2Seq, build_model, build_task
from attnlab.plugins import Task
from attnlab.vocab import Vocab


def save_bundle(folder: Path, config: ExperimentConfig, model: Seq2Seq) -> Path:
    """Write ``model`` and its ``config`` into ``folder`` (created if needed); returns it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(config.model_dump_json(indent=2))
    vocab = {"source": "".join(model.src_vocab.chars), "target": "".join(model.tgt_vocab.chars)}
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, folder / "weights.pt")
    return folder


def load_bundle(folder: Path, device: str | torch.device = "cpu") -> tuple[ExperimentConfig, Task, Seq2Seq]:
    """Rebuild the config, task and model saved by :func:`save_bundle`, in eval mode."""
    folder = Path(folder)
    config = ExperimentConfig.model_validate_json((folder / "config.json").read_text())
    task = build_task(config)
    vocab = json.loads((folder / "vocab.json").read_text())
    model = build_model(config, task, (Vocab(tuple(vocab["source"])), Vocab(tuple(vocab["target"]))))
    state = torch.load(folder / "weights.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    return config, task, model.to(device).eval()
