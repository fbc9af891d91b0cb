"""The pairs task: train on your own file of (source, target) pairs.

``attnlab train --task pairs -o task.path=words.csv`` reads CSV, TSV, JSON Lines or Parquet
(:mod:`attnlab.plugins.builtin.pairs_file`) in any text encoding; the columns, each side's
tokenization, an optional alignment column, a source-length limit and how rows are cleaned
(:mod:`attnlab.plugins.builtin.pairs_rows`) are options. Every mistake in the file is refused in
one line before anything trains, and what reading did is one line too (:meth:`data_summary`). A
source given with several targets has several correct references; the splits go by a hash of the
source (see :func:`attnlab.data.splits.corpus_splits`), 80/10/10 of the sources unless sizes are
given, or come from files of their own (``validation_path``, ``test_path``).
"""

from __future__ import annotations

import hashlib
import random
from functools import lru_cache
from pathlib import Path
from typing import Any

from attnlab.plugins.builtin.pairs_file import PairsTable, check_encoding, locate, read_pairs
from attnlab.plugins.builtin.pairs_rows import KeptRows, RowRules, data_line, keep_rows
from attnlab.plugins.task import Example, Task
from attnlab.plugins.tokens import TOKENIZATIONS

#: The longest source (in tokens) kept by default: the built-in transformer's position limit.
MAX_LENGTH = 512


class PairsTask(Task):
    """Examples from a file (``path``): ``source_column`` -> ``target_column``.

    Options: ``format`` (csv, tsv, jsonl, parquet; default from the suffix); ``encoding`` (any
    Python codec, default utf-8); ``source_tokenization`` / ``target_tokenization``
    (``characters`` or ``whitespace``); ``alignment_column`` (JSON lists of source positions per
    target token; default none); ``max_length``: sources with more tokens are refused, or with
    ``drop_long=true`` left out; ``strip`` (default true): surrounding whitespace removed from
    every cell; ``dedupe`` (default true): an exact duplicate (source, target) row is left out;
    ``drop_empty`` (default false): rows with an empty side are left out instead of refused;
    ``validation_path`` / ``test_path``: files (same columns and options) that are the
    validation / test split (their first ``validation_size`` / ``test_size`` sources, all of
    them by default; their sources are left out of training).
    """

    #: Without sizes given, a file is split 80/10/10 by its sources.
    default_split = (0.8, 0.1, 0.1)

    def __init__(
        self,
        path: str,
        *,
        format: str | None = None,  # noqa: A002 - the option's name on the command line
        encoding: str = "utf-8",
        source_column: str = "source",
        target_column: str = "target",
        alignment_column: str | None = None,
        source_tokenization: str = "characters",
        target_tokenization: str = "characters",
        max_length: int = MAX_LENGTH,
        drop_long: bool = False,
        strip: bool = True,
        dedupe: bool = True,
        drop_empty: bool = False,
        validation_path: str | None = None,
        test_path: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        if not path:
            raise ValueError("needs the file to read: -o task.path=FILE (.csv, .tsv, .jsonl or .parquet)")
        for side, value in (("source", source_tokenization), ("target", target_tokenization)):
            if value not in TOKENIZATIONS:
                raise ValueError(f"{side}_tokenization must be one of {', '.join(TOKENIZATIONS)}, got {value!r}")
        if not isinstance(max_length, int) or isinstance(max_length, bool) or not 1 <= max_length <= MAX_LENGTH:
            raise ValueError(f"max_length must be an integer in 1..{MAX_LENGTH}, got {max_length!r}")
        for name, switch in (("drop_long", drop_long), ("strip", strip), ("dedupe", dedupe), ("drop_empty", drop_empty)):
            if not isinstance(switch, bool):
                raise ValueError(f"{name} must be true or false, got {switch!r}")
        self.source_tokenization, self.target_tokenization = source_tokenization, target_tokenization
        rules = RowRules(source_tokenization, target_tokenization, max_length, strip, dedupe, drop_empty, drop_long)
        reading = (format, check_encoding(encoding), (source_column, target_column, alignment_column), rules)
        files = {"train": path, "validation": validation_path, "test": test_path}
        read = {name: _kept(str(locate(file)), *reading) for name, file in files.items() if file}
        self.path = str(locate(path))
        #: Split -> (absolute path, sha256) of each file read, the training file's first.
        self.files = {name: (str(locate(files[name] or "")), digest) for name, (_, digest) in read.items()}
        self.kept = {name: rows for name, (rows, _) in read.items()}
        self.examples = self.kept["train"].examples
        self._held_out = {name: rows.examples for name, rows in self.kept.items() if name != "train"}
        # One version for all the files: a change to any of them is new data.
        digests = [digest for _, digest in self.files.values()]
        self.digest = digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()
        self.source_alphabet, self.target_alphabet, self._longest, self._sources = _vocabulary(
            tuple(rows for rows, _ in read.values()), rules
        )

    def corpus(self) -> list[Example]:
        return list(self.examples)

    def held_out(self) -> dict[str, list[Example]]:
        return {name: list(examples) for name, examples in self._held_out.items()}

    def key(self, example: Example) -> str:
        """The source: all targets of a source stay in one split."""
        return example.source

    def data_version(self) -> str:
        return self.digest

    def data_summary(self) -> str:
        """Rows read and kept of each file, each reason rows were left out, cells stripped and
        sources with several targets: ``words.csv: 5,000 rows read, 4,990 kept (10 duplicate left out)``."""
        return "; ".join(data_line(Path(self.files[name][0]).name, rows.counts) for name, rows in self.kept.items())

    def sample(self, rng: random.Random) -> Example:
        return rng.choice(self.examples)

    @property
    def space_size(self) -> int:
        return self._sources

    @property
    def max_source_length(self) -> int:
        return self._longest


def _kept(
    file: str,
    format: str | None,
    encoding: str,
    columns: tuple[str, str, str | None],
    rules: RowRules,  # noqa: A002
) -> tuple[KeptRows, str]:
    """The rows kept of ``file`` and its digest: the file's table is read once while the file is
    unchanged (:func:`read_pairs`), and cleaned once per table and rules."""
    table = read_pairs(file, format, columns, encoding)
    return _clean(table, file, rules), table.digest


@lru_cache(maxsize=4)
def _clean(table: PairsTable, file: str, rules: RowRules) -> KeptRows:
    return keep_rows(table, file, rules)


@lru_cache(maxsize=4)
def _vocabulary(read: tuple[KeptRows, ...], rules: RowRules) -> tuple[Any, Any, int, int]:
    """(source alphabet, target alphabet, longest source in tokens, distinct sources) over every
    file's kept rows: a side's alphabet is a string of characters or a sorted list of tokens."""
    from attnlab.plugins.tokens import split_tokens

    everything = [ex for rows in read for ex in rows.examples]
    alphabets = []
    for side, tokenization in (("source", rules.source_tokenization), ("target", rules.target_tokenization)):
        tokens = {t for ex in everything for t in split_tokens(getattr(ex, side), tokenization)}
        alphabets.append("".join(sorted(tokens)) if tokenization == "characters" else sorted(tokens))
    longest = max(len(split_tokens(ex.source, rules.source_tokenization)) for ex in everything)
    return alphabets[0], alphabets[1], longest, len({ex.source for ex in everything})
