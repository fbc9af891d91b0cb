"""A user's file of (source, target) pairs read with pandas and checked, each mistake one line.

Formats by suffix: ``.csv``, ``.tsv``, ``.jsonl`` (JSON Lines) and ``.parquet``. The file is only
read, never written. Rows are numbered from 1, the header not counted.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".parquet": "parquet"}


class PairsFileError(ValueError):
    """A file the pairs task cannot use; the message is one line naming the file."""


@dataclass(frozen=True)
class PairsTable:
    """The rows of a pairs file: sources, targets and alignments (None per row without one),
    the 1-based row number of each, and the sha256 of the file's bytes."""

    sources: tuple[str, ...]
    targets: tuple[str, ...]
    alignments: tuple[Any, ...]
    rows: tuple[int, ...]
    digest: str


def file_format(path: Path, given: str | None) -> str:
    """The format of ``path``: ``given`` (csv, tsv, jsonl, parquet) or the one its suffix names."""
    allowed = ", ".join(sorted(set(FORMATS.values())))
    if given is not None:
        if given not in FORMATS.values():
            raise PairsFileError(f"format {given!r} is not one of {allowed}")
        return given
    found = FORMATS.get(path.suffix.lower())
    if found is None:
        raise PairsFileError(
            f"{path}: cannot tell its format from the suffix {path.suffix or '(none)'!r}; name it .csv, .tsv, .jsonl or "
            f".parquet, or set -o task.format=FORMAT ({allowed})"
        )
    return found


def read_pairs(path: str, fmt: str | None, columns: tuple[str, str, str | None]) -> PairsTable:
    """The (source, target, alignment) columns of the file at ``path`` as text, checked: it
    exists, has a known format, decodes, has rows and the columns. Cached while the file's size
    and modification time stay."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise PairsFileError(f"{file} does not exist" if not file.exists() else f"{file} is not a file")
    stat = file.stat()
    return _read(file, file_format(file, fmt), columns, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _read(file: Path, fmt: str, columns: tuple[str, str, str | None], _mtime_ns: int, _size: int) -> PairsTable:
    import pandas as pd

    data = file.read_bytes()
    if not data.strip():
        raise PairsFileError(f"{file} is empty: it holds no rows")
    if fmt != "parquet":
        _check_utf8(file, data)
    try:
        if fmt == "parquet":
            frame = pd.read_parquet(io.BytesIO(data))
        elif fmt == "jsonl":
            frame = pd.read_json(io.BytesIO(data), lines=True, dtype=False)
        else:
            frame = pd.read_csv(io.BytesIO(data), sep="\t" if fmt == "tsv" else ",", dtype=str, keep_default_na=False)
    except Exception as exc:  # pandas raises many types for a malformed file; each is the user's file
        raise PairsFileError(f"{file} is not a readable {fmt} file: {' '.join(str(exc).split())[:200]}") from None
    if frame.empty:
        raise PairsFileError(f"{file} is empty: it holds no rows")
    missing = [name for name in columns if name is not None and name not in frame.columns]
    if missing:
        present = ", ".join(map(str, frame.columns))
        raise PairsFileError(f"{file} has no column {missing[0]!r}; its columns: {present} (name them with -o task.source_column=...)")
    source, target, alignment = columns
    return PairsTable(
        tuple(_texts(frame[source])),
        tuple(_texts(frame[target])),
        tuple(frame[alignment]) if alignment is not None else (None,) * len(frame),
        tuple(range(1, len(frame) + 1)),
        hashlib.sha256(data).hexdigest(),
    )


def _check_utf8(file: Path, data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PairsFileError(f"{file}: line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8") from None


def _texts(column: Any) -> list[str]:
    """Each cell as text; a missing one (NaN, None) as the empty string."""
    return ["" if value is None or (isinstance(value, float) and value != value) else str(value) for value in column]


def parse_alignment(value: Any) -> list[list[int]] | None:
    """An alignment cell: a list of lists of source indices, given as such (JSON Lines, Parquet)
    or as JSON text (CSV, TSV); None for an empty cell. ValueError when it is neither."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        value = json.loads(value)
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list) or not all(hasattr(entry, "__iter__") and not isinstance(entry, str) for entry in value):
        raise ValueError("expected a list of lists of source positions, as [[0], [1, 2], []]")
    entries = [list(entry.tolist() if hasattr(entry, "tolist") else entry) for entry in value]
    if not all(isinstance(i, int) and not isinstance(i, bool) for entry in entries for i in entry):
        raise ValueError("expected a list of lists of source positions, as [[0], [1, 2], []]")
    return entries
