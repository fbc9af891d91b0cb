"""A user's file of (source, target) pairs read with pandas and checked, each mistake one line.

Formats by suffix: ``.csv``, ``.tsv``, ``.jsonl`` (JSON Lines) and ``.parquet``; text files in
any Python codec (``encoding``, default UTF-8, a byte-order mark allowed). The file is only read,
never written. Rows are numbered from 1, the header not counted.
"""

from __future__ import annotations

import codecs
import hashlib
import io
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".parquet": "parquet"}
#: Codecs shown when an encoding is unknown or a file does not decode.
COMMON_ENCODINGS = "utf-8, utf-16, latin-1, cp1252"


class PairsFileError(ValueError):
    """A file the pairs task cannot use; the message is one line naming the file."""


@dataclass(frozen=True, eq=False)
class PairsTable:
    """The rows of a pairs file, the first being row 1: sources, targets and alignments (None
    without an alignment column, else None per row without one; a missing source or target cell
    is None), and the sha256 of the file's bytes. Equal only to itself (hashing a million rows would cost more than reading
    them): :func:`read_pairs` gives the same table while the file is unchanged."""

    sources: tuple[str | None, ...]
    targets: tuple[str | None, ...]
    alignments: tuple[Any, ...] | None
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


def check_encoding(encoding: str) -> str:
    """``encoding`` if Python knows the codec; PairsFileError naming it otherwise."""
    try:
        return codecs.lookup(encoding).name
    except (LookupError, TypeError):
        raise PairsFileError(f"encoding {encoding!r} is not a text encoding Python knows; e.g. {COMMON_ENCODINGS}") from None


def locate(path: str) -> Path:
    """The absolute path of the file ``path`` names (``~`` expanded, links followed), checked to
    be a file; PairsFileError for a missing file, a folder, a loop of symbolic links or any other
    reason it cannot be reached."""
    given = Path(path).expanduser().absolute()
    try:
        file = given.resolve(strict=True)
    except FileNotFoundError:
        raise PairsFileError(f"{given} does not exist") from None
    except RuntimeError:  # Python reports a loop of symbolic links this way
        raise PairsFileError(f"{given} cannot be read: its symbolic links form a loop; point it at a file") from None
    except OSError as exc:
        raise PairsFileError(f"{given} cannot be read: {exc.strerror or exc}") from None
    if not file.is_file():
        raise PairsFileError(f"{given} is not a file")
    return file


def read_pairs(path: str, fmt: str | None, columns: tuple[str, str, str | None], encoding: str = "utf-8") -> PairsTable:
    """The (source, target, alignment) columns of the file at ``path`` as text, checked: it
    exists and can be read, has a known format, decodes, has rows and the columns. Cached while
    the file's size and modification time stay."""
    file = locate(path)
    chosen = file_format(file, fmt)
    codec = check_encoding(encoding)
    try:
        stat = file.stat()
    except OSError as exc:
        raise PairsFileError(f"{file} cannot be read: {exc.strerror or exc}") from None
    return _read(file, chosen, columns, codec, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _read(file: Path, fmt: str, columns: tuple[str, str, str | None], encoding: str, _mtime_ns: int, _size: int) -> PairsTable:
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise PairsFileError(f"{file} cannot be read: {exc.strerror or exc}") from None
    if not data.strip():
        raise PairsFileError(f"{file} is empty: it holds no rows")
    frame = _frame(file, data, fmt, encoding)
    if frame.empty:
        raise PairsFileError(f"{file} is empty: it holds no rows")
    _check_columns(file, frame, fmt, columns)
    source, target, alignment = columns
    return PairsTable(
        tuple(_texts(frame[source])),
        tuple(_texts(frame[target])),
        tuple(frame[alignment]) if alignment is not None else None,
        hashlib.sha256(data).hexdigest(),
    )


def _frame(file: Path, data: bytes, fmt: str, encoding: str) -> Any:
    """The file's table as a pandas DataFrame (text cells as str, missing ones None)."""
    import pandas as pd

    reader: io.BytesIO | io.StringIO = io.BytesIO(data) if fmt == "parquet" else io.StringIO(_decode(file, data, encoding))
    try:
        if fmt == "parquet":
            return pd.read_parquet(reader)
        if fmt == "jsonl":
            return pd.read_json(reader, lines=True, dtype=False)
        return pd.read_csv(reader, sep="\t" if fmt == "tsv" else ",", dtype=str, keep_default_na=False, na_values=[])
    except Exception as exc:  # pandas raises many types for a malformed file; each is the user's file
        raise PairsFileError(f"{file} is not a readable {fmt} file: {' '.join(str(exc).split())[:200]}") from None


def _decode(file: Path, data: bytes, encoding: str) -> str:
    """The file's text; a UTF-8 byte-order mark is dropped."""
    codec = "utf-8-sig" if encoding == "utf-8" else encoding
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PairsFileError(
            f"{file}: line {line} is not {encoding} text (byte 0x{data[exc.start]:02x}); give the file's encoding with "
            f"-o task.encoding=NAME (e.g. {COMMON_ENCODINGS}) or save it as UTF-8"
        ) from None


def _check_columns(file: Path, frame: Any, fmt: str, columns: tuple[str, str, str | None]) -> None:
    """PairsFileError naming the first of ``columns`` the file lacks, its columns, and what to do."""
    missing = [name for name in columns if name is not None and name not in frame.columns]
    if not missing:
        return
    present = ", ".join(repr(str(name)) for name in frame.columns)
    message = f"{file} has no column {missing[0]!r}; its columns: {present}"
    if fmt == "csv" and len(frame.columns) == 1 and "\t" in str(frame.columns[0]):
        raise PairsFileError(f"{message}; its header is separated by tabs: read it as TSV with -o task.format=tsv")
    if missing[0] == "":
        unnamed = [str(name) for name in frame.columns if str(name).startswith("Unnamed: ")]
        hint = f"a column with an empty header is read as {unnamed[0]!r}: name it so" if unnamed else "a column name cannot be empty"
        raise PairsFileError(f"{message}; {hint}")
    raise PairsFileError(f"{message} (name them with -o task.source_column=... and -o task.target_column=...)")


def _texts(column: Any) -> list[str | None]:
    """Each cell as text; a missing one (NaN, None) as None."""
    return [None if value is None or (isinstance(value, float) and value != value) else str(value) for value in column]


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
