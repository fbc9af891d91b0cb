"""Run ids as people type them: whole (32 hex digits) or their first characters, as ``attnlab
runs`` shows them. Which run each names is asked of the store by the caller; what the answers
mean, and the one error that names every id that fits no run or several, is decided here."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from attnlab.lab.errors import UserError

Run = TypeVar("Run")

#: An MLflow run id, or its first characters.
RUN_ID = re.compile(r"[0-9a-f]{1,32}")
#: The length of a whole run id.
FULL_LENGTH = 32


def run_id_key(text: str) -> str | None:
    """``text`` as a run id or prefix (trimmed, lower case), or None when it cannot be one."""
    key = text.strip().lower()
    return key if RUN_ID.fullmatch(key) else None


def prefix_filter(key: str) -> str:
    """The MLflow search filter of the runs whose id starts with ``key`` (a :func:`run_id_key`)."""
    return f"attributes.run_id LIKE '{key}%'"


def find_runs(given: list[str], by_id: Callable[[str], Run | None], by_prefix: Callable[[str], Sequence[Run]], store: str) -> list[Run]:
    """The runs ``given`` names, in order: a whole id is looked up with ``by_id`` (None: no such
    run), a shorter one with ``by_prefix`` (at most two of the runs it starts: one is the run,
    two say it is ambiguous). One UserError naming every id that fits no run in ``store`` or
    several."""
    found: list[Run] = []
    unknown: list[str] = []
    ambiguous: list[str] = []
    for text in given:
        key = run_id_key(text)
        if key is None:
            unknown.append(text)
            continue
        matches: Sequence[Run]
        if len(key) == FULL_LENGTH:
            run = by_id(key)
            matches = [] if run is None else [run]
        else:
            matches = by_prefix(key)
        if len(matches) == 1:
            found.append(matches[0])
        else:
            (ambiguous if matches else unknown).append(text)
    problems = []
    if unknown:
        problems.append(f"no run {', '.join(repr(t) for t in unknown)} in {store}")
    if ambiguous:
        problems.append(f"{', '.join(repr(t) for t in ambiguous)} match(es) several runs: give more characters")
    if problems:
        raise UserError("; ".join(problems) + " (list runs with: attnlab runs)")
    return found
