"""Registry retention: which versions of a registered model a retrain prunes.

Pure (no MLflow, no Prefect): the retrain flow reads the versions' numbers and promotion records,
asks :func:`to_prune` and deletes what it names.

Rule: the newest ``keep`` versions (by number) stay. Of the older ones, every version is pruned
except the champion, the previous champion (the version that held the alias before it, see
:func:`previous_champion`) and a version without a promotion decision yet (one being promoted
right now, or one registered by hand).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: Versions a retrain keeps by default (``attnlab schedule --keep``).
DEFAULT_KEEP = 10
#: The smallest ``keep``: room for a challenger beside the champion.
MIN_KEEP = 2


@dataclass(frozen=True)
class VersionRecord:
    """What retention needs of one model version.

    ``decided``: a promotion decision is recorded on it (tag ``promotion.promoted``).
    ``promoted``: that decision gave it the alias. ``compared_with``: the version that held the
    alias when it was decided (tag ``promotion.champion_version``), or None.
    """

    number: int
    decided: bool = True
    promoted: bool = False
    compared_with: int | None = None


def keep_problem(keep: int) -> str | None:
    """Why ``keep`` is not a valid number of versions to keep, or None."""
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < MIN_KEEP:
        return f"keep {keep!r}: give at least {MIN_KEEP} (the champion and a challenger)"
    return None


def check_keep(keep: int) -> None:
    """ValueError when ``keep`` is below :data:`MIN_KEEP` or not an int."""
    problem = keep_problem(keep)
    if problem:
        raise ValueError(problem)


def previous_champion(champion: int | None, versions: Iterable[VersionRecord]) -> int | None:
    """The version that held the alias before ``champion``: the one the champion was compared
    with when it was promoted; when that is not recorded (its decision is still being written,
    or a retried promotion compared it with itself), the newest promoted version older than it."""
    if champion is None:
        return None
    records = {record.number: record for record in versions}
    current = records.get(champion)
    if current is not None and current.promoted and current.compared_with not in (None, champion):
        return current.compared_with
    earlier = [r.number for r in records.values() if r.promoted and r.number < champion]
    return max(earlier, default=None)


def to_prune(versions: Iterable[VersionRecord], keep: int, champion: int | None, previous: int | None) -> list[int]:
    """The version numbers to prune, oldest first: those beyond the newest ``keep`` that are
    neither ``champion`` nor ``previous`` nor undecided."""
    check_keep(keep)
    ordered = sorted(versions, key=lambda record: record.number, reverse=True)
    protected = {champion, previous}
    older = ordered[keep:]
    return sorted(r.number for r in older if r.decided and r.number not in protected)
