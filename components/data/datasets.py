"""A generated dataset as a file: which config fields it depends on, and its JSON form.

The train flow caches datasets on :func:`data_spec`, so two configs that differ only in model or
training settings share one file.
"""

from __future__ import annotations

import json
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

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
        "warmup_steps", "weight_decay", "label_smoothing", "dropout", "checkpoint", "average_last",
    }
)  # fmt: skip


def data_spec(config: ExperimentConfig) -> dict[str, Any]:
    """The fields of ``config`` the data depends on (JSON-ready)."""
    return {key: value for key, value in config.model_dump(mode="json").items() if key not in NOT_DATA}


def save_splits(path: Path, splits: Splits) -> Path:
    """Write ``splits`` as JSON (atomically: a reader never sees half a file); returns ``path``."""
    data = {name: [[ex.source, ex.target, ex.alignment] for ex in examples] for name, examples in splits.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as tmp:
        tmp.write(json.dumps(data, ensure_ascii=False))
    Path(tmp.name).replace(path)
    return path


def load_splits(path: Path) -> Splits:
    """The splits written by :func:`save_splits` (new lists each call, so a caller may reorder
    them; the file is parsed once per process while its size and modification time stay)."""
    stat = Path(path).stat()
    parsed = _parse(Path(path).resolve(), stat.st_mtime_ns, stat.st_size)
    return Splits(*(list(examples) for examples in parsed))


@lru_cache(maxsize=4)
def _parse(path: Path, mtime_ns: int, size: int) -> tuple[tuple[Example, ...], ...]:
    """The examples of each split of the file ``path`` as it was at ``mtime_ns`` and ``size``
    (the cache key: a flow reads its data file in every step)."""
    data = json.loads(path.read_text())

    def example(source: str, target: str, alignment: list[list[int]] | None) -> Example:
        return Example(source, target, None if alignment is None else tuple(map(tuple, alignment)))

    return tuple(tuple(example(*row) for row in data[name]) for name in SPLIT_NAMES)
