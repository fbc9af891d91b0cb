"""A trained model on disk: its config, vocabularies and weights in one folder.

The folder holds ``config.json``, ``vocab.json`` and ``weights.pt``, and ``task.json``: what the
model keeps of its task (:mod:`attnlab.model.saved_task`), so that loading never reads the training
data (bundles written before it load by building the task from the config, as they always did).
It is what checkpoints, the MLflow model and ``attnlab predict`` load. Torch files (weights, training checkpoints) are
read by :func:`load_weights`: weights-only, so a crafted file cannot run code. A folder whose
files are missing, are not what they should be, or do not fit each other is refused by
:class:`DamagedBundle` naming the file at fault. Importing this module does not import torch:
:func:`read_bundle` checks the two JSON files before torch loads.
"""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnlab.lab.config import ExperimentConfig
from attnlab.lab.errors import UserError
from attnlab.plugins.tokens import unit_name

if TYPE_CHECKING:
    import torch

    from attnlab.data.vocab import Vocab
    from attnlab.model.assembly import Seq2Seq
    from attnlab.plugins import Task

#: Builds the model of a bundle over the given (source, target) vocabularies.
Rebuild = Callable[[tuple["Vocab", "Vocab"]], "Seq2Seq"]
#: A side of ``vocab.json``: a string of characters, or a list of tokens.
SavedTokens = str | list[str]
#: Tensor name -> its shape.
Shapes = dict[str, tuple[int, ...]]

BUNDLE_FILES = ("config.json", "vocab.json", "weights.pt")
#: The ids every vocabulary reserves before its characters (PAD, SOS, EOS, UNK).
SPECIAL_COUNT = 4


class DamagedBundle(UserError, ValueError):
    """A bundle folder attnlab cannot load: a file missing, not JSON, not a config or vocabulary,
    or a config or vocabulary that does not match the weights. The message (one line) names the
    file and what is wrong with it."""


def save_bundle(folder: Path, config: ExperimentConfig, model: Seq2Seq, tasks: tuple[Task, Task | None] | None = None) -> Path:
    """Write ``model``, its ``config`` and what it keeps of its ``tasks`` (task, test task or None;
    built from the config when not given) into ``folder`` (created if needed); returns it."""
    import torch

    from attnlab.model.saved_task import save_tasks

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if tasks is None:
        from attnlab.model.task_choice import build_tasks

        tasks = build_tasks(config)
    save_tasks(folder, *tasks)
    (folder / "config.json").write_text(config.model_dump_json(indent=2))
    vocab = {"source": saved_tokens(model.src_vocab), "target": saved_tokens(model.tgt_vocab)}
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, folder / "weights.pt")
    return folder


def load_bundle(folder: Path, device: str | torch.device = "cpu") -> tuple[ExperimentConfig, Task, Seq2Seq]:
    """Rebuild the config, task and model saved by :func:`save_bundle`, in eval mode;
    :class:`DamagedBundle` when the folder's files are missing, damaged or do not fit together.
    The task is the one the model saved when it reads data (:func:`bundle_tasks`)."""
    from attnlab.model.assembly import build_model

    folder = Path(folder)
    config, (source, target) = read_bundle(folder)
    task, _ = bundle_tasks(folder, config)
    model = build_model(config, task, (vocab_of(source), vocab_of(target)))
    state = load_weights(folder / "weights.pt")
    check_weights(folder, model, state, lambda grown: build_model(config, task, grown, probe=False))
    model.load_state_dict(state)
    return config, task, model.to(device).eval()


def bundle_tasks(folder: Path, config: ExperimentConfig) -> tuple[Task, Task | None]:
    """The (task, test task or None) the model of bundle ``folder`` predicts with: restored from
    its ``task.json`` for a task that reads data, else built from ``config``
    (:func:`attnlab.model.saved_task.saved_tasks`); :class:`DamagedBundle` for a damaged ``task.json``."""
    from attnlab.model.saved_task import TASK_FILE, saved_tasks

    path = Path(folder) / TASK_FILE
    data = _read_json(path)[1] if path.is_file() else None
    try:
        return saved_tasks(config, data)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if data is None or not isinstance(data, dict) or not data.get("reads_data"):
            raise
        raise DamagedBundle(
            f"{path} is not a saved task ({type(exc).__name__}: {exc}); restore the task.json saved with the model"
        ) from None


def read_bundle(folder: Path) -> tuple[ExperimentConfig, tuple[SavedTokens, SavedTokens]]:
    """The config and the (source, target) tokens of bundle ``folder``, checked: every bundle
    file present, ``config.json`` a valid config, ``vocab.json`` two strings of distinct
    characters (or lists of distinct tokens). :class:`DamagedBundle` otherwise. Does not import torch."""
    folder = Path(folder)
    missing = [name for name in BUNDLE_FILES if not (folder / name).is_file()]
    if missing:
        raise DamagedBundle(
            f"{str(folder)!r} is not a complete model bundle: {', '.join(missing)} missing "
            f"(a bundle folder holds {', '.join(BUNDLE_FILES)}, as attnlab train saves them)"
        )
    return _read_config(folder / "config.json"), _read_vocab(folder / "vocab.json")


def _read_json(path: Path) -> tuple[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        return text, json.loads(text)
    except UnicodeDecodeError:
        raise DamagedBundle(f"{path} is not JSON (not UTF-8 text); restore the file saved with the model") from None
    except json.JSONDecodeError as exc:
        raise DamagedBundle(
            f"{path} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); restore the file saved with the model"
        ) from None
    except OSError as exc:
        raise DamagedBundle(f"cannot read {path}: {exc.strerror or exc}") from None


def _read_config(path: Path) -> ExperimentConfig:
    from pydantic import ValidationError

    from attnlab.lab.config_sources import validation_message

    text, _ = _read_json(path)
    try:
        return ExperimentConfig.model_validate_json(text)
    except ValidationError as exc:
        raise DamagedBundle(f"{path} is not a valid attnlab config: {validation_message(exc, {})}") from None


def _read_vocab(path: Path) -> tuple[SavedTokens, SavedTokens]:
    _, data = _read_json(path)
    if not isinstance(data, dict) or not all(_is_saved_tokens(data.get(side)) for side in ("source", "target")):
        raise DamagedBundle(
            f'{path} is not a vocabulary: expected {{"source": "CHARACTERS", "target": "CHARACTERS"}} (a list of tokens for a side of whitespace-separated tokens)'
        )
    for side in ("source", "target"):
        if len(set(data[side])) != len(data[side]):
            raise DamagedBundle(f"{path} is not a vocabulary: its {side} tokens repeat one; restore the file saved with the model")
    return data["source"], data["target"]


def _is_saved_tokens(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(token, str) and token for token in value))


def saved_tokens(vocab: Vocab) -> SavedTokens:
    """How ``vocab.json`` holds a vocabulary's tokens: a string of its characters (the format of
    every earlier bundle), or the list of its tokens on a side of whitespace-separated tokens."""
    return "".join(vocab.tokens) if vocab.tokenization == "characters" else list(vocab.tokens)


def vocab_of(saved: SavedTokens) -> Vocab:
    """The vocabulary :func:`saved_tokens` wrote."""
    from attnlab.data.vocab import Vocab

    return Vocab(tuple(saved), "characters" if isinstance(saved, str) else "whitespace")


class RefusedFile(UserError, ValueError):
    """A torch file attnlab will not load: it holds more than tensors and plain values (pickled
    objects or code), or it is no torch file at all. The message is one line."""


def load_weights(path: Path) -> Any:
    """What ``torch.save`` wrote to ``path``, loaded weights-only onto the CPU: tensors and plain
    containers and values (dicts, lists, tuples, numbers, strings, None). Nothing in the file is
    imported or run; anything else raises :class:`RefusedFile` naming the file."""
    import torch

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


def check_weights(folder: Path, model: Seq2Seq, state: Any, rebuild: Rebuild) -> None:
    """:class:`DamagedBundle` unless ``state`` (what ``weights.pt`` holds) has exactly the tensor
    names and shapes of ``model`` (built from ``config.json`` and ``vocab.json``); the message
    says which file does not match the weights. ``rebuild((source, target))`` builds the same
    model over other vocabularies: it tells the shapes that follow a vocabulary's size."""
    import torch

    weights = folder / "weights.pt"
    if not isinstance(state, dict) or not all(isinstance(value, torch.Tensor) for value in state.values()):
        raise DamagedBundle(f"{weights} does not hold a model's weights (named tensors); restore the file saved with the model")
    expected = {name: tuple(value.shape) for name, value in model.state_dict().items()}
    saved = {name: tuple(value.shape) for name, value in state.items()}
    if expected != saved:
        raise DamagedBundle(_vocab_mismatch(folder, model, expected, saved, rebuild) or _config_mismatch(folder, expected, saved))


def _vocab_mismatch(folder: Path, model: Seq2Seq, expected: Shapes, saved: Shapes, rebuild: Rebuild) -> str | None:
    """The sentence for a ``vocab.json`` whose sizes alone differ from the weights, else None."""
    from attnlab.data.vocab import Vocab

    if expected.keys() != saved.keys() or any(len(expected[name]) != len(saved[name]) for name in expected):
        return None
    source, target = model.src_vocab, model.tgt_vocab
    grown = {
        "source": rebuild((Vocab(source.tokens + ("\0",), source.tokenization), target)),
        "target": rebuild((source, Vocab(target.tokens + ("\0",), target.tokenization))),
    }
    follows = {}  # (tensor, dimension) -> the side whose vocabulary size it is
    for side, other in grown.items():
        for name, value in other.state_dict().items():
            follows.update({(name, i): side for i, size in enumerate(value.shape) if size != expected[name][i]})
    differing = [(name, i) for name in expected for i, (want, got) in enumerate(zip(expected[name], saved[name])) if want != got]
    if not all(key in follows for key in differing):
        return None
    trained = {follows[(name, i)]: saved[name][i] - SPECIAL_COUNT for name, i in differing}
    listed = {side: (len(vocab.tokens), unit_name(vocab.tokenization))
              for side, vocab in (("source", source), ("target", target))}  # fmt: skip
    sides = "; ".join(
        f"it lists {listed[side][0]} {side} {listed[side][1]}, the weights were trained with {count}"
        for side, count in sorted(trained.items())
    )
    return f"{folder / 'vocab.json'} does not match {folder / 'weights.pt'}: {sides}; restore the vocab.json saved with these weights"


def _config_mismatch(folder: Path, expected: Shapes, saved: Shapes) -> str:
    """The sentence for a ``config.json`` that builds another model than the weights hold."""
    shape = next((name for name in expected if name in saved and expected[name] != saved[name]), None)
    missing = sorted(expected.keys() - saved.keys())
    if shape is not None:
        detail = f"tensor {shape} is {list(saved[shape])} in the weights but {list(expected[shape])} in the model the config describes"
    elif missing:
        detail = (
            f"the weights have no tensor {missing[0]}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
            + ", which the model the config describes needs"
        )
    else:
        extra = sorted(saved.keys() - expected.keys())
        detail = (
            f"the weights hold tensor {extra[0]}"
            + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else "")
            + ", which the model the config describes has no place for"
        )
    return f"{folder / 'config.json'} does not match {folder / 'weights.pt'}: {detail}; restore the config.json saved with these weights"
