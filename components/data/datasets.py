"""A generated dataset as a file: which config fields it depends on, and its JSON form.

The train flow caches datasets on :func:`data_spec`, so two configs that differ only in model or
training settings share one file. A file records what it was generated from (its key,
:func:`attnlab.data.data_key.data_key`) and the sha256 of its splits, so a file cut short, changed
or replaced by another is told apart from a good one (:func:`entry_problem`) rather than trusted:

    {"format": 2, "key": "<sha256>", "sha256": "<sha256 of the splits' JSON>",
     "splits": {"train": [[source, target, alignment | null], ...], "validation": [...], "test": [...]}}
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

from attnlab.data.data_key import DATA_FORMAT
from attnlab.data.splits import SPLIT_NAMES, Splits
from attnlab.lab.config import ExperimentConfig
from attnlab.plugins import Example

#: Config fields that cannot change the generated data; every other field is part of the data
#: cache key (so a new config field errs on the side of regenerating).
NOT_DATA = frozenset(
    {
        "scorer", "scorer_options", "encoder", "encoder_options", "decoder", "decoder_options",
        "embedding_dim", "hidden_size", "epochs", "batch_size", "length_bucketing", "learning_rate", "lr_schedule",
        "clip_norm", "teacher_forcing", "target_exact_match", "beam_size", "device", "compile_loops",
        "warmup_steps", "weight_decay", "label_smoothing", "dropout", "checkpoint", "average_last", "model_name",
        "explain_examples", "explain_steps",
    }
)  # fmt: skip


class UnusableData(ValueError):
    """A data file that cannot be read as :func:`save_splits` wrote it: ``problem`` says why, the
    message names the file too (one line)."""

    def __init__(self, path: Path, problem: str):
        super().__init__(f"the data file {path} {problem}")
        self.problem = problem


def data_spec(config: ExperimentConfig) -> dict[str, Any]:
    """The fields of ``config`` the data depends on (JSON-ready)."""
    return {key: value for key, value in config.model_dump(mode="json").items() if key not in NOT_DATA}


def checksum(splits_json: str) -> str:
    """The sha256 (hex) of the splits' JSON text, as :func:`save_splits` writes it."""
    return hashlib.sha256(splits_json.encode()).hexdigest()


def save_splits(path: Path, splits: Splits, key: str = "") -> Path:
    """Write ``splits`` generated from ``key`` with their checksum (atomically: a temporary file
    renamed into place, so a reader, or a run killed mid-write, never leaves half a file); ``path``."""
    body = json.dumps(
        {name: [[ex.source, ex.target, ex.alignment] for ex in examples] for name, examples in splits.items()}, ensure_ascii=False
    )
    header = json.dumps({"format": DATA_FORMAT, "key": key, "sha256": checksum(body)})
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as tmp:
        tmp.write(f'{header[:-1]}, "splits": {body}}}')
    Path(tmp.name).replace(path)
    return path


def load_splits(path: Path) -> Splits:
    """The splits written by :func:`save_splits` (new lists each call, so a caller may reorder
    them; the file is parsed and checked once per process while its size and modification time
    stay). :class:`UnusableData` when the file is not one :func:`save_splits` wrote, or its
    content changed since."""
    return Splits(*(list(examples) for examples in _entry(path)[1]))


def entry_problem(path: Path, key: str) -> str | None:
    """Why the data file ``path`` cannot stand for data generated from ``key``, or None when it
    can: it cannot be read or parsed (cut short), is of another format, fails its checksum,
    holds another key's data, or has an empty split (a generated split never is)."""
    try:
        found, splits = _entry(path)
    except UnusableData as exc:
        return exc.problem
    if found != key:
        return f"holds the data of another key ({found[:12]}, not {key[:12]})"
    empty = [name for name, examples in zip(SPLIT_NAMES, splits) if not examples]
    if not empty:
        return None
    return f"has an empty {empty[0]} split" if len(empty) == 1 else f"has empty {', '.join(empty[:-1])} and {empty[-1]} splits"


def _entry(path: Path) -> tuple[str, tuple[tuple[Example, ...], ...]]:
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise UnusableData(path, f"cannot be read ({exc.strerror or exc})") from None
    return _parse(Path(path).resolve(), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _parse(path: Path, mtime_ns: int, size: int) -> tuple[str, tuple[tuple[Example, ...], ...]]:
    """The key and the examples of each split of the file ``path`` as it was at ``mtime_ns`` and
    ``size`` (the cache key: a flow reads its data file in every step); UnusableData otherwise."""
    try:
        entry = json.loads(path.read_bytes())
    except OSError as exc:
        raise UnusableData(path, f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise UnusableData(path, f"is not valid JSON, cut short or damaged ({exc})") from None
    if not isinstance(entry, dict) or entry.get("format") != DATA_FORMAT or not isinstance(entry.get("splits"), dict):
        raise UnusableData(path, f"is not a data file of format {DATA_FORMAT}")
    if entry.get("sha256") != checksum(json.dumps(entry["splits"], ensure_ascii=False)):
        raise UnusableData(path, "fails its checksum: its content changed after it was written")
    try:
        splits = tuple(tuple(_example(*row) for row in entry["splits"][name]) for name in SPLIT_NAMES)
    except (KeyError, TypeError, ValueError):
        raise UnusableData(path, "does not hold train, validation and test examples") from None
    return str(entry.get("key")), splits


def _example(source: str, target: str, alignment: list[list[int]] | None) -> Example:
    if not isinstance(source, str) or not isinstance(target, str):
        raise TypeError("an example's source and target are strings")
    return Example(source, target, None if alignment is None else tuple(map(tuple, alignment)))
