"""Resuming a sweep: which of its runs are already done.

Every finished run of a sweep records what it trained as one key (:func:`run_key`: its whole
config and the version of the data it read) and the summary the sweep compares. A sweep started
again with ``--resume`` reuses, for each of its runs, the latest finished run with the same key
in its experiment, and trains only the rest; an interrupted study goes on where it stopped.

Pure: the flow reads the finished runs from MLflow and carries out :func:`reusable`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Tag of a finished sweep run: its :func:`run_key`.
RUN_KEY = "attnlab.sweep.key"
#: The artifact of a finished sweep run holding the summary the sweep compares.
SUMMARY_ARTIFACT = "sweep/summary.json"


def run_key(config: dict[str, Any], data_version: str | None) -> str:
    """The key of a run of ``config`` (its JSON form) on data of ``data_version`` (None for a
    generated task, whose data the config fixes): 16 hex digits of a sha256, the same for equal
    configs whatever their keys' order. Anything that changes what is trained changes the key."""
    text = json.dumps({"config": config, "data_version": data_version}, sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class FinishedRun:
    """A finished sweep run found in the experiment: its id, key and end time (ms)."""

    run_id: str
    key: str
    end_time: int


def reusable(keys: Sequence[str], finished: Sequence[FinishedRun]) -> dict[int, str]:
    """Index in ``keys`` -> the id of the run to reuse for it: the latest finished run of that
    key. A key asked for twice reuses the same run for both."""
    latest: dict[str, FinishedRun] = {}
    for run in finished:
        if run.key not in latest or run.end_time > latest[run.key].end_time:
            latest[run.key] = run
    return {index: latest[key].run_id for index, key in enumerate(keys) if key in latest}
