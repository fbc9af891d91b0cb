"""What a study decides about its trials: the objective and its direction, the pruner, the
study's name, which trials count against the budget, how many are left, which is best, and the
trials table.

Pure: a trial arrives as a :class:`TrialRecord` (what Optuna's storage holds of it, read by
``attnlab.flows``); nothing here imports Optuna.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from attnlab.lab.errors import UserError

#: Which way an objective is better, in Optuna's words.
Direction = Literal["maximize", "minimize"]
#: What a trial is scored by (the validation measure of the weights it kept) -> its direction.
OBJECTIVES: dict[str, Direction] = {"val_exact_match": "maximize", "val_loss": "minimize"}
#: The pruners a space may name, with the settings each takes (and their defaults).
PRUNERS: dict[str, dict[str, Any]] = {
    "median": {"startup_trials": 5, "warmup_epochs": 1},
    "hyperband": {"min_epochs": 1, "reduction_factor": 3},
    "threshold": {"lower": None, "upper": None, "warmup_epochs": 0},
    "none": {},
}
#: A trial ended by the tune itself (Ctrl-C, a lost worker, a tune that stopped): it does not
#: count against the budget (user attribute ``attnlab.outcome``).
INTERRUPTED = "interrupted"
#: Trial states that have ended (Optuna's names).
ENDED = ("COMPLETE", "PRUNED", "FAIL")
#: The user attribute of a study's baseline trial (the base config's own values).
BASELINE_ATTR = "attnlab.baseline"


class Pruned(Exception):
    """A trial stopped early by its study's pruner (its validation curve fell behind)."""


@dataclass(frozen=True)
class TrialRecord:
    """One trial: its ``number``, Optuna ``state`` (COMPLETE, PRUNED, FAIL, RUNNING, WAITING), its
    objective ``value`` (None until complete), ``params`` and user attributes ``attrs``."""

    number: int
    state: str
    value: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    attrs: dict[str, Any] = field(default_factory=dict)
    seconds: float | None = None


def parse_pruner(value: Any, where: str = "the search space") -> dict[str, Any] | None:
    """``{name, **settings}`` of a space's ``pruner`` (a name, or a mapping with ``name``);
    None for ``none``. UserError for an unknown pruner or setting."""
    data = {"name": value} if isinstance(value, str) else dict(value) if isinstance(value, Mapping) else None
    if data is None or data.get("name") not in PRUNERS:
        raise UserError(f"{where}: pruner {value!r}: choose one of {', '.join(PRUNERS)} (or {{name: median, startup_trials: 5}})")
    name = data.pop("name")
    unknown = sorted(set(data) - set(PRUNERS[name]))
    if unknown:
        raise UserError(f"{where}: the {name} pruner has no setting {unknown[0]!r}; it takes {', '.join(PRUNERS[name]) or 'none'}")
    settings = {**PRUNERS[name], **data}
    for key, setting in settings.items():
        if setting is not None and (isinstance(setting, bool) or not isinstance(setting, (int, float)) or setting < 0):
            raise UserError(f"{where}: pruner setting {key} {setting!r}: give a number >= 0")
    if name == "threshold" and settings["lower"] is None and settings["upper"] is None:
        raise UserError(f"{where}: the threshold pruner needs lower or upper (prune a trial whose curve is below lower or above upper)")
    return None if name == "none" else {"name": name, **settings}


def direction(objective: str) -> Direction:
    """``maximize`` or ``minimize``."""
    return OBJECTIVES[objective]


def trial_value(objective: str, selection: Mapping[str, Any]) -> float:
    """A finished trial's objective: its kept weights' validation measure (a run summary's
    ``selection``: ``selected_val_exact_match``, ``selected_val_loss``)."""
    return float(selection[f"selected_{objective}"])


def study_name(base: Mapping[str, Any], space: Mapping[str, Any]) -> str:
    """The default study of a tune: named by its arm and a digest of the base config and the
    space, so the same command resumes the same study, and another config starts another.
    ``base``: the config as JSON-ready data; ``space``: :meth:`attnlab.tuning.space.Space.as_dict`."""
    digest = hashlib.sha256(json.dumps({"base": base, "space": space}, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"tune-{base['task']}-{base['scorer']}-{base['encoder']}-{base['decoder']}-{digest}"


def counts(record: TrialRecord) -> bool:
    """Whether a trial counts against the budget: it ended, and not by an interruption."""
    return record.state in ENDED and record.attrs.get("attnlab.outcome") != INTERRUPTED


def trials_left(total: int, records: Sequence[TrialRecord], running: int = 0) -> int:
    """How many more trials to start for the study to hold ``total`` counted trials, ``running``
    being under way."""
    return max(0, total - sum(counts(r) for r in records) - running)


def needs_baseline(records: Sequence[TrialRecord], total: int) -> bool:
    """Whether a study whose space asks for a baseline trial should queue it now: no baseline
    trial has counted or waits to run, and the budget of ``total`` trials is not yet spent (a
    baseline trial ended by an interruption is queued again)."""
    held = any(r.attrs.get(BASELINE_ATTR) and (counts(r) or r.state in ("RUNNING", "WAITING")) for r in records)
    return not held and trials_left(total, records) > 0


def sampler_seed(seed: int, records: Sequence[TrialRecord]) -> int:
    """The sampler's seed for a run of the study: ``seed`` shifted by the trials it holds, so a
    resumed study does not draw its first trials' random values again."""
    return seed + len(records)


def best_trial(records: Sequence[TrialRecord], objective: str) -> TrialRecord | None:
    """The complete trial with the best finite value (the lower number on a tie); None without one."""
    done = [r for r in records if r.state == "COMPLETE" and r.value is not None and math.isfinite(r.value)]
    if not done:
        return None
    sign = 1.0 if direction(objective) == "maximize" else -1.0
    return min(done, key=lambda r: (-sign * float(r.value or 0.0), r.number))


#: ``90``, ``90s``, ``30m``, ``2h``, ``1.5h``.
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$")


def parse_duration(text: str | None, flag: str = "--timeout") -> float | None:
    """Seconds of ``text`` (``90``, ``90s``, ``30m``, ``2h``); None for None; UserError otherwise."""
    if text is None:
        return None
    match = _DURATION.match(text)
    if not match or float(match.group(1)) <= 0:
        raise UserError(f"{flag} {text!r}: give a positive duration in seconds, or with s, m or h, e.g. 90, 30m, 2h")
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[match.group(2)]


def trial_rows(records: Sequence[TrialRecord], runs: Mapping[int, str]) -> list[dict[str, Any]]:
    """The trials table: one row per trial (number, state, value, seconds, run id, the params,
    and what ended it when it did not complete), in number order."""
    rows = []
    for record in sorted(records, key=lambda r: r.number):
        note = record.attrs.get("attnlab.outcome") or ("baseline" if record.attrs.get(BASELINE_ATTR) else "")
        rows.append({"trial": record.number, "state": record.state, "value": record.value, "seconds": record.seconds,
                     "run_id": runs.get(record.number), **{f"param {k}": v for k, v in record.params.items()}, "note": note})  # fmt: skip
    return rows


def format_trials(rows: Sequence[Mapping[str, Any]], objective: str, best: TrialRecord | None) -> str:
    """The trials table as text, the best trial marked."""
    if not rows:
        return "no trials"
    params = sorted({key for row in rows for key in row if key.startswith("param ")})
    header = ["trial", "state", objective, "s", *(p.removeprefix("param ") for p in params), "run"]
    lines = [header]
    for row in rows:
        value = "-" if row["value"] is None else f"{row['value']:.4f}"
        seconds = "-" if row["seconds"] is None else f"{row['seconds']:.0f}"
        cells = [_cell(row.get(p)) for p in params]
        mark = " *" if best is not None and row["trial"] == best.number else ""
        run = (row["run_id"] or "-")[:8]
        lines.append([f"{row['trial']}{mark}", row["state"] + (f" ({row['note']})" if row["note"] else ""), value, seconds, *cells, run])
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
