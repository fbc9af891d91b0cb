"""A trained model on disk: its config, vocabularies and weights in one folder.

The folder holds ``config.json``, ``vocab.json`` and ``weights.pt``; it is what checkpoints,
the MLflow model and ``attnlab predict`` load. Torch files (weights, training checkpoints) are
read by :func:`load_weights`: weights-only, so a crafted file cannot run code.
"""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path
from typing import Any

import torch

from attnlab.config import ExperimentConfig
from attnlab.errors import UserError
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
    state = load_weights(folder / "weights.pt")
    model.load_state_dict(state)
    return config, task, model.to(device).eval()


class RefusedFile(UserError, ValueError):
    """A torch file attnlab will not load: it holds more than tensors and plain values (pickled
    objects or code), or it is no torch file at all. The message is one line."""


def load_weights(path: Path) -> Any:
    """What ``torch.save`` wrote to ``path``, loaded weights-only onto the CPU: tensors and plain
    containers and values (dicts, lists, tuples, numbers, strings, None). Nothing in the file is
    imported or run; anything else raises :class:`RefusedFile` naming the file."""
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"GLOBAL ([\w.]+)", str(exc))
        if found is None:
            raise RefusedFile(f"{path} is not a torch file attnlab can load (not tensors and plain values)") from None
        raise RefusedFile(
            f"refusing to load {path}: it would import {found.group(1)}, and unpickling it could run code; "
            "load only weights and checkpoints that attnlab wrote"
        ) from None
    except OSError as exc:
        raise RefusedFile(f"cannot read {path}: {exc.strerror or exc}") from None
    except Exception as exc:  # noqa: BLE001  torch reports a foreign file as KeyError, RuntimeError, EOFError...
        raise RefusedFile(f"{path} is not a torch file attnlab can load ({type(exc).__name__}: {exc})") from None
