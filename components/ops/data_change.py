"""Whether a scheduled retrain has anything new to learn: a task that read its data from a file
(or a dictionary release) names that data by a digest, and a challenger trained on data that the
champion, or the last retrain, already trained on would only repeat it (and, under a cron of
every minute, register a new version every minute)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainedOn:
    """The data digest a model of the registered model was trained on (None: not recorded), and
    who trained it: ``what`` as a message names it, e.g. ``the champion (version 3)`` or ``the
    last retrain (run 1a2b3c4d, not promoted)``."""

    data: str | None
    what: str


def unchanged_reason(current: str | None, earlier: list[TrainedOn]) -> str | None:
    """Why a retrain can end without training, or None when it should train.

    ``current``: the digest of the data the task reads now (None: a generated task, always fresh
    data); ``earlier``: what the champion and the last completed retrain were trained on, in that
    order (an empty list: nothing trained yet). The first whose data equals ``current`` is named."""
    if current is None:
        return None
    for trained in earlier:
        if trained.data == current:
            return f"data unchanged: {trained.what} was trained on this data ({current[:12]})"
    return None
