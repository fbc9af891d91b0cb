"""``attnlab predict --file PATH`` (or ``-`` for stdin): sources read one per line and decoded in
batches, each batch's outputs printed in input order as soon as it is decoded.

The reading, batching and refusing of lines is :mod:`attnlab.lab.predict_inputs`; this module opens
the input, prints and reports. Without ``--skip-bad`` every line is checked before anything is
printed, which needs two passes over the input: a file is read twice; stdin (or a pipe given as
--file) is first copied to an unnamed temporary file, so nothing is printed before it ends. With
``--skip-bad`` the input is read once, batch by batch, refused lines reported on stderr.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable
from typing import BinaryIO

import typer

from attnlab.flows.tracking.errors import UserError
from attnlab.lab.predict_inputs import STDIN, SourceLine, batches, first_bad_line, read_lines, split_batch


def open_input(path: str) -> BinaryIO:
    """The binary stream of --file ``path`` (stdin for ``-``); UserError naming a file that
    cannot be opened."""
    if path == STDIN:
        return sys.stdin.buffer
    try:
        return open(path, "rb")  # noqa: SIM115  closed by the caller
    except OSError as exc:
        raise UserError(f"--file {path!r} cannot be read: {exc.strerror or exc}") from None


def rereadable(stream: BinaryIO) -> BinaryIO:
    """``stream`` itself when it can be read again from the start, else a temporary file holding
    a copy of it (copied in pieces, not held in memory)."""
    if stream.seekable():
        return stream
    copy = tempfile.TemporaryFile(prefix="attnlab-predict-")
    shutil.copyfileobj(stream, copy)
    copy.seek(0)
    return copy


def check_all_lines(stream: BinaryIO, problem_of: Callable[[str], str | None], name: str) -> BinaryIO:
    """UserError with the first refused line (``line N: ...``), or with no source line at all,
    after reading ``stream`` through; else the stream again from its start."""
    stream = rereadable(stream)
    problem, count = first_bad_line(read_lines(stream), problem_of)
    if problem is not None:
        raise UserError(f"{problem}; nothing was predicted (--skip-bad predicts the other lines)")
    if count == 0:
        raise UserError(f"no input given: {name} has no source lines (blank lines are skipped)")
    stream.seek(0)
    return stream


def predict_lines(
    stream: BinaryIO,
    problem_of: Callable[[str], str | None],
    decode: Callable[[list[str]], list[str]],
    json_output: bool,
    skip_bad: bool,
    name: str,
) -> None:
    """Decode the source lines of ``stream`` batch by batch with ``decode`` (texts -> outputs),
    printing ``SOURCE -> OUTPUT`` (or, with ``json_output``, one JSON object a line: line, source,
    prediction) as each batch is done. Refused lines: with ``skip_bad``, reported on stderr with
    their line numbers and counted at the end; else the input is checked whole first
    (:func:`check_all_lines`)."""
    if not skip_bad:
        stream = check_all_lines(stream, problem_of, name)
    read = skipped = 0
    for batch in batches(read_lines(stream)):
        read += len(batch)
        taken, refused = split_batch(batch, problem_of)
        if refused and not skip_bad:  # the input changed since it was checked
            raise UserError(f"{refused[0]}; the input changed while it was read")
        for problem in refused:
            typer.echo(f"skipped {problem}", err=True)
        skipped += len(refused)
        if taken:
            _print_batch(taken, decode([line.text for line in taken]), json_output)
    if skip_bad:
        typer.echo(f"skipped {skipped} of {read} source line{'s' * (read != 1)} of {name}", err=True)


def _print_batch(lines: list[SourceLine], outputs: list[str], json_output: bool) -> None:
    if json_output:
        shown = [
            json.dumps({"line": line.number, "source": line.text, "prediction": output}, ensure_ascii=False)
            for line, output in zip(lines, outputs)
        ]
    else:
        shown = [f"{line.text} -> {output}" for line, output in zip(lines, outputs)]
    typer.echo("\n".join(shown))  # one write (and flush) a batch
