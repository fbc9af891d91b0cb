"""What ``attnlab predict`` is asked besides the model, decided without torch: where the sources
come from (arguments, a file or stdin), source lines read one by one with their line numbers and
grouped in batches, which lines are refused and why, and the beam size.

Lines are read from a binary stream, so a file of any size is never held in memory: only the line
being read (at most :data:`LONGEST_LINE` bytes of it) and the batch being decoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from attnlab.lab.config import MAX_BEAM

#: Source lines decoded together.
BATCH_LINES = 256
#: The longest line read, in bytes (its line ending included); a longer one is refused without
#: being held in memory. Every built-in task's sources are far shorter.
LONGEST_LINE = 10_000
#: The source argument (or --file value) that reads the sources from stdin.
STDIN = "-"


@dataclass(frozen=True)
class SourceLine:
    """A non-blank line of an input: its number in the input (from 1, blank lines counted), its
    text without the line ending, and why it cannot be read as text (or None)."""

    number: int
    text: str
    problem: str | None = None


def choose_input(texts: Sequence[str], file: str | None) -> str | None:
    """Where predict's sources come from: None for the ``texts`` arguments, else the file to read
    (:data:`STDIN` for stdin: ``--file -`` or a lone ``-`` argument). ValueError when both
    arguments and a file are given, or neither."""
    if file is None and list(texts) == [STDIN]:
        return STDIN
    if file is not None and texts:
        raise ValueError(
            f"--file {file!r} and {len(texts)} source argument{'s' * (len(texts) != 1)} given; "
            "give the sources either as arguments or with --file (or '-' for stdin), not both"
        )
    if STDIN in texts:
        raise ValueError("'-' reads the sources from stdin and cannot be given with other source arguments")
    if file == "":
        raise ValueError("--file '' is empty; give a file path, or '-' to read stdin")
    if file is None and not texts:
        raise ValueError("no input given; pass at least one source string, --file PATH, or '-' to read stdin")
    return file


def read_lines(stream: BinaryIO, longest: int = LONGEST_LINE) -> Iterator[SourceLine]:
    """The non-blank lines of ``stream`` in order, one at a time. Blank lines (empty or only
    whitespace) are skipped but counted, so numbers are those of the input. The line ending
    (``\\n`` or ``\\r\\n``) and a UTF-8 byte order mark at the start are removed; the text is not
    otherwise stripped. A line that is not UTF-8 or is over ``longest`` bytes comes with its
    ``problem`` and empty text (the long one is read past in pieces, never held whole)."""
    number = 0
    while raw := stream.readline(longest + 1):
        number += 1
        if len(raw) > longest and not raw.endswith(b"\n"):
            _read_past_line(stream, longest)
            yield SourceLine(number, "", f"the line is longer than {longest:,} bytes")
            continue
        raw = raw.removesuffix(b"\n").removesuffix(b"\r")
        if number == 1:
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield SourceLine(number, "", f"the line is not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1})")
            continue
        if text.strip():
            yield SourceLine(number, text)


def _read_past_line(stream: BinaryIO, piece: int) -> None:
    while (rest := stream.readline(piece)) and not rest.endswith(b"\n"):
        pass


def batches(lines: Iterable[SourceLine], size: int = BATCH_LINES) -> Iterator[list[SourceLine]]:
    """``lines`` in lists of ``size`` (the last one shorter), taken from ``lines`` as needed."""
    batch: list[SourceLine] = []
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def line_problem(line: SourceLine, problem_of: Callable[[str], str | None]) -> str | None:
    """``'line N: <why>'`` when ``line`` is refused: it cannot be read as text, or
    ``problem_of(text)`` (the model's check of one source, naming it) says why; else None."""
    problem = line.problem or problem_of(line.text)
    return None if problem is None else f"line {line.number}: {problem}"


def split_batch(batch: Sequence[SourceLine], problem_of: Callable[[str], str | None]) -> tuple[list[SourceLine], list[str]]:
    """(the lines of ``batch`` taken, the :func:`line_problem` of each line refused), in order."""
    taken, refused = [], []
    for line in batch:
        problem = line_problem(line, problem_of)
        if problem is None:
            taken.append(line)
        else:
            refused.append(problem)
    return taken, refused


def first_bad_line(lines: Iterable[SourceLine], problem_of: Callable[[str], str | None]) -> tuple[str | None, int]:
    """(the :func:`line_problem` of the first refused line or None, how many lines were read up
    to it: all of them when none is refused)."""
    count = 0
    for line in lines:
        count += 1
        problem = line_problem(line, problem_of)
        if problem is not None:
            return problem, count
    return None, count


def parse_beam_size(value: object, name: str = "--beam-size") -> int:
    """``value`` (an int, or its text) as a beam size: a whole number from 1 (greedy decoding) to
    :data:`attnlab.lab.config.MAX_BEAM`; ValueError naming ``name`` and the value otherwise."""
    allowed = f"give a whole number from 1 (greedy decoding) to {MAX_BEAM}"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{name} {value!r} is not a whole number; {allowed}")
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"{name} {value!r} is not a whole number; {allowed}") from None
    if not 1 <= number <= MAX_BEAM:
        raise ValueError(f"{name} {value!r} is out of range; {allowed}")
    return number
