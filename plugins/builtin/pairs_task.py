"""The pairs task: train on your own file of (source, target) pairs.

``attnlab train --task pairs -o task.path=words.csv`` reads CSV, TSV, JSON Lines or Parquet
(:mod:`attnlab.plugins.builtin.pairs_file`); the columns, each side's tokenization, an optional
alignment column and a source-length limit are options. Every mistake in the file is refused in
one line before anything trains. A source given with several targets has several correct
references; the splits go by a hash of the source (see :func:`attnlab.data.splits.corpus_splits`),
or come from files of their own (``validation_path``, ``test_path``).
"""

from __future__ import annotations

import hashlib
import logging
import random
from pathlib import Path
from typing import Any

from attnlab.plugins.builtin.pairs_file import PairsFileError, PairsTable, parse_alignment, read_pairs
from attnlab.plugins.task import Example, Task
from attnlab.plugins.tokens import TOKENIZATIONS, join_tokens, split_tokens

#: The longest source (in tokens) kept by default: the built-in transformer's position limit.
MAX_LENGTH = 512


class PairsTask(Task):
    """Examples from a file (``path``): ``source_column`` -> ``target_column``.

    Options: ``format`` (csv, tsv, jsonl, parquet; default from the suffix);
    ``source_tokenization`` / ``target_tokenization`` (``characters`` or ``whitespace``);
    ``alignment_column`` (JSON lists of source positions per target token; default none);
    ``max_length``: sources with more tokens are refused, or with ``drop_long=true`` left out
    (the number left out is said); ``validation_path`` / ``test_path``: files (same columns and
    options) that are the validation / test split (their first ``validation_size`` /
    ``test_size`` sources; their sources are left out of training).
    """

    def __init__(
        self,
        path: str,
        *,
        format: str | None = None,  # noqa: A002 - the option's name on the command line
        source_column: str = "source",
        target_column: str = "target",
        alignment_column: str | None = None,
        source_tokenization: str = "characters",
        target_tokenization: str = "characters",
        max_length: int = MAX_LENGTH,
        drop_long: bool = False,
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
        self.source_tokenization, self.target_tokenization = source_tokenization, target_tokenization
        self.path = str(Path(path).expanduser().resolve())
        columns = (source_column, target_column, alignment_column)
        files = {"train": path, "validation": validation_path, "test": test_path}
        read = {name: self._read(file, format, columns, max_length, drop_long) for name, file in files.items() if file}
        #: Split -> (absolute path, sha256) of each file read, the training file's first.
        self.files = {name: (str(Path(files[name] or "").expanduser().resolve()), digest) for name, (_, digest) in read.items()}
        self.examples = read.pop("train")[0]
        self._held_out = {name: examples for name, (examples, _) in read.items()}
        # One version for all the files: a change to any of them is new data.
        digests = [digest for _, digest in self.files.values()]
        self.digest = digests[0] if len(digests) == 1 else hashlib.sha256(" ".join(digests).encode()).hexdigest()
        everything = [ex for examples in (self.examples, *self._held_out.values()) for ex in examples]
        self.source_alphabet = self._alphabet({t for ex in everything for t in self.source_tokens(ex.source)}, source_tokenization)
        self.target_alphabet = self._alphabet({t for ex in everything for t in self.target_tokens(ex.target)}, target_tokenization)
        self._longest = max(len(self.source_tokens(ex.source)) for ex in everything)
        self._sources = len({ex.source for ex in everything})

    def _read(
        self, path: str, format: str | None, columns: tuple[str, str, str | None], max_length: int, drop_long: bool
    ) -> tuple[list[Example], str]:  # noqa: A002
        """The examples of the file at ``path`` and its digest; too-long sources left out are
        said (``dropped`` counts the training file's)."""
        table = read_pairs(path, format, columns)
        examples, dropped = self._examples(table, str(Path(path).expanduser().resolve()), max_length, drop_long)
        if dropped:
            logging.getLogger("attnlab.progress").info(
                "pairs: left out %d source(s) longer than %d tokens (drop_long) from %s", dropped, max_length, path
            )
        if not hasattr(self, "dropped"):
            self.dropped = dropped
        return examples, table.digest

    def _examples(self, table: PairsTable, file: str, max_length: int, drop_long: bool) -> tuple[list[Example], int]:
        """The rows of ``file`` as examples (each side's tokens joined the task's way), and how
        many rows were left out as too long. PairsFileError for empty sides, too-long sources
        (unless dropped) and bad alignments."""
        sources = [split_tokens(text, self.source_tokenization) for text in table.sources]
        targets = [split_tokens(text, self.target_tokenization) for text in table.targets]
        for side, tokens in (("source", sources), ("target", targets)):
            empty = [row for row, seq in zip(table.rows, tokens) if not seq]
            if empty:
                raise PairsFileError(f"{file}: {len(empty)} row(s) have an empty {side} (the first: row {empty[0]})")
        long_rows = [row for row, seq in zip(table.rows, sources) if len(seq) > max_length]
        if long_rows and not drop_long:
            raise PairsFileError(
                f"{file}: {len(long_rows)} source(s) are longer than max_length = {max_length} tokens "
                f"(the first: row {long_rows[0]}); raise -o task.max_length or leave them out with -o task.drop_long=true"
            )
        examples = []
        for row, source, target, cell in zip(table.rows, sources, targets, table.alignments):
            if len(source) > max_length:
                continue
            examples.append(Example(join_tokens(source, self.source_tokenization), join_tokens(target, self.target_tokenization),
                                    _alignment(file, row, cell, len(source), len(target))))  # fmt: skip
        if not examples:
            raise PairsFileError(f"{file}: every source is longer than max_length = {max_length} tokens")
        return examples, len(long_rows)

    @staticmethod
    def _alphabet(tokens: set[str], tokenization: str) -> str | list[str]:
        """The tokens seen on a side: a string of characters, or a sorted list of tokens."""
        return "".join(sorted(tokens)) if tokenization == "characters" else sorted(tokens)

    def corpus(self) -> list[Example]:
        return list(self.examples)

    def held_out(self) -> dict[str, list[Example]]:
        return {name: list(examples) for name, examples in self._held_out.items()}

    def key(self, example: Example) -> str:
        """The source: all targets of a source stay in one split."""
        return example.source

    def data_version(self) -> str:
        return self.digest

    def sample(self, rng: random.Random) -> Example:
        return rng.choice(self.examples)

    @property
    def space_size(self) -> int:
        return self._sources

    @property
    def max_source_length(self) -> int:
        return self._longest


def _alignment(file: str, row: int, cell: Any, source_length: int, target_length: int) -> tuple[tuple[int, ...], ...] | None:
    """A row's alignment cell checked against its sides' lengths (PairsFileError naming the row)."""
    try:
        entries = parse_alignment(cell)
    except ValueError as exc:
        raise PairsFileError(f"{file}: row {row}: the alignment is not readable: {exc}") from None
    if entries is None:
        return None
    if len(entries) != target_length:
        raise PairsFileError(f"{file}: row {row}: the alignment has {len(entries)} entries; the target has {target_length} tokens")
    outside = [i for entry in entries for i in entry if not 0 <= i < source_length]
    if outside:
        raise PairsFileError(
            f"{file}: row {row}: the alignment points at source position {outside[0]}; the source has {source_length} tokens"
        )
    return tuple(tuple(entry) for entry in entries)
