"""Which rows of a pairs file become examples, and why the others do not.

Surrounding whitespace is stripped (``strip``), control characters are refused, empty sides are
refused or left out (``drop_empty``), too-long sources are refused or left out (``drop_long``),
and an exact duplicate of an earlier (source, target) pair is left out (``dedupe``). Every rule
is counted (:data:`COUNTS`), so a run can say what happened to its data in one line. Pure.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from attnlab.plugins.builtin.pairs_file import PairsFileError, PairsTable, parse_alignment
from attnlab.plugins.task import Example
from attnlab.plugins.tokens import join_tokens, split_tokens

#: What :func:`keep_rows` counts: rows read and kept, rows left out (empty, too long,
#: duplicate), cells whose surrounding whitespace was stripped, and sources with several targets.
COUNTS = ("read", "kept", "empty", "too_long", "duplicate", "stripped", "several_targets")
#: Control characters (Unicode category Cc) a side may not hold; on a whitespace side the
#: whitespace ones (tab, line breaks, separators) only separate tokens.
CONTROL = {
    "characters": re.compile(r"[\x00-\x1f\x7f-\x9f]"),
    "whitespace": re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]"),
}


@dataclass(frozen=True)
class RowRules:
    """How rows are read: each side's tokenization, the longest source (``max_length`` tokens)
    and the four switches of the module docstring."""

    source_tokenization: str = "characters"
    target_tokenization: str = "characters"
    max_length: int = 512
    strip: bool = True
    dedupe: bool = True
    drop_empty: bool = False
    drop_long: bool = False


@dataclass(frozen=True, eq=False)
class KeptRows:
    """The examples kept, in file order, and the counts of :data:`COUNTS`; equal only to itself."""

    examples: tuple[Example, ...]
    counts: dict[str, int]


def keep_rows(table: PairsTable, file: str, rules: RowRules) -> KeptRows:
    """The examples of ``table`` (the rows of ``file``) by ``rules``, in one pass over the rows.
    PairsFileError (one line naming the file and the first row at fault) for a control
    character, empty sides or too-long sources that are not to be dropped, and a bad alignment."""
    counts = dict.fromkeys(COUNTS, 0)
    counts["read"] = len(table.sources)
    faults: dict[str, list[int]] = {"source": [], "target": [], "long": []}
    examples: list[Example] = []
    targets: dict[str, str | set[str]] = {}  # source -> its target, or the set of its several targets
    alignments = table.alignments if table.alignments is not None else itertools.repeat(None)
    for row, source_cell, target_cell, cell in zip(itertools.count(1), table.sources, table.targets, alignments):
        source = _text(source_cell, "source", rules.source_tokenization, rules.strip, counts, row, file)
        target = _text(target_cell, "target", rules.target_tokenization, rules.strip, counts, row, file)
        source_tokens, target_tokens = split_tokens(source, rules.source_tokenization), split_tokens(target, rules.target_tokenization)
        if not source_tokens or not target_tokens:
            faults["source" if not source_tokens else "target"].append(row)
            counts["empty"] += 1
        elif len(source_tokens) > rules.max_length:
            faults["long"].append(row)
            counts["too_long"] += 1
        elif _seen_before(targets, source, target) and rules.dedupe:
            counts["duplicate"] += 1
        else:
            alignment = _alignment(file, row, cell, len(source_tokens), len(target_tokens))
            examples.append(Example(source, target, alignment))
    _refuse_faults(file, faults, rules)
    if not examples:
        raise PairsFileError(f"{file}: no row is left to train on ({_left_out(counts)})")
    counts["kept"] = len(examples)
    counts["several_targets"] = sum(isinstance(found, set) for found in targets.values())
    return KeptRows(tuple(examples), counts)


def _seen_before(targets: dict[str, str | set[str]], source: str, target: str) -> bool:
    """Whether (``source``, ``target``) was seen before; records it. One string per source, a set
    only for a source with several targets (a million sets would cost 200 MB)."""
    found = targets.get(source)
    if found is None:
        targets[source] = target
        return False
    if isinstance(found, set):
        seen = target in found
        found.add(target)
        return seen
    if found == target:
        return True
    targets[source] = {found, target}
    return False


def _refuse_faults(file: str, faults: dict[str, list[int]], rules: RowRules) -> None:
    """PairsFileError for the rows with an empty side (unless ``drop_empty``) or a too-long
    source (unless ``drop_long``), naming how many and the first."""
    for side in ("source", "target"):
        rows = faults[side]
        if rows and not rules.drop_empty:
            raise PairsFileError(
                f"{file}: {len(rows)} row(s) have an empty {side} (the first: row {rows[0]}); "
                "fill them in, or leave them out with -o task.drop_empty=true"
            )
    rows = faults["long"]
    if rows and not rules.drop_long:
        raise PairsFileError(
            f"{file}: {len(rows)} source(s) are longer than max_length = {rules.max_length} tokens "
            f"(the first: row {rows[0]}); raise -o task.max_length or leave them out with -o task.drop_long=true"
        )


def _text(cell: str | None, name: str, tokenization: str, strip: bool, counts: dict[str, int], row: int, file: str) -> str:
    """A cell as the side's text: stripped when ``strip`` (counted), its tokens joined the
    side's way; PairsFileError when it holds a control character."""
    text = "" if cell is None else cell
    if strip and text != (stripped := text.strip()):
        counts["stripped"] += 1
        text = stripped
    found = CONTROL[tokenization].search(text)
    if found:
        raise PairsFileError(
            f"{file}: row {row}: the {name} holds the control character U+{ord(found.group()):04X}; "
            "remove it (no one can type it into a prediction)"
        )
    if tokenization == "characters":
        return text
    joined = join_tokens(text.split(), tokenization)
    return text if joined == text else joined


def _left_out(counts: dict[str, int]) -> str:
    reasons = {"empty": "empty", "too_long": "too long", "duplicate": "duplicate"}
    return ", ".join(f"{counts[key]} {text}" for key, text in reasons.items() if counts[key]) or "no rows"


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


def data_line(name: str, counts: dict[str, int]) -> str:
    """What reading ``name`` did, in one line: rows read and kept, each reason rows were left out,
    cells stripped, sources with several targets."""
    line = f"{name}: {counts['read']:,} rows read, {counts['kept']:,} kept"
    left = _left_out(counts)
    if left != "no rows":
        line += f" ({left} left out)"
    if counts["stripped"]:
        line += f"; {_count(counts['stripped'], 'cell')} stripped of surrounding whitespace"
    if counts["several_targets"]:
        line += f"; {_count(counts['several_targets'], 'source')} with several targets (each a correct reference)"
    return line


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'s' * (n != 1)}"
