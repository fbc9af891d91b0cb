"""The one promotion rule: when a challenger takes the champion's place.

Pure (no MLflow, no Prefect): every command that promotes (``attnlab train``, the retrain flow,
``attnlab sweep --register``) scores the challenger and the champion on the same benchmark
examples and asks :func:`decide`; the flows only fetch the scores and move the alias.

Rule: the challenger wins when there is no champion, or when
``challenger_score - champion_score > margin`` (the difference rounded to ``PRECISION`` decimals,
so float noise never decides). A NaN challenger never wins; a tie never wins; a champion whose
score is NaN loses to any number. A challenger that cannot be measured on the benchmark (see
:func:`attnlab.evaluation.benchmark.incomparable_reason`) is not compared at all.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

#: Decimal places the score difference is rounded to before it is compared with the margin.
PRECISION = 9
#: The margin a challenger must beat the champion by when none is given: 0, strictly better.
DEFAULT_MARGIN = 0.0
#: Examples drawn for a registered model's benchmark by its first promotion (later ones reuse
#: that set; :func:`attnlab.evaluation.benchmark.draw_benchmark` draws them).
BENCHMARK_SIZE = 500


@dataclass(frozen=True)
class Decision:
    """The outcome of one challenger-vs-champion comparison on a benchmark.

    ``champion_version`` and ``champion_score`` describe the alias holder the challenger was
    compared with (None: there was none). ``challenger_score`` is None when the challenger could
    not be measured on the benchmark (then ``promoted`` is False and ``reason`` says why).
    ``champion_unusable`` says why the champion could not be loaded to be scored (see
    :func:`keep_unusable_champion`), or is None.
    """

    promoted: bool
    reason: str
    challenger_version: str
    challenger_score: float | None
    champion_version: str | None
    champion_score: float | None
    margin: float
    champion_unusable: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check_margin(margin: float) -> None:
    """ValueError unless ``margin`` is an exact-match difference in [0, 1)."""
    if not (isinstance(margin, (int, float)) and 0.0 <= margin < 1.0):
        raise ValueError(f"margin must be in [0, 1) (an exact-match difference), got {margin!r}")


def decide(challenger_score: float, champion_score: float | None, margin: float) -> tuple[bool, str]:
    """(promoted, reason) for two scores measured on the same benchmark examples."""
    if math.isnan(challenger_score):
        return False, "challenger score is NaN"
    if champion_score is None:
        return True, f"first champion: no model held the alias (challenger {challenger_score:.4f})"
    if math.isnan(champion_score):
        return True, f"the champion scores NaN on the benchmark; challenger {challenger_score:.4f}"
    difference = round(challenger_score - champion_score, PRECISION)
    if difference > margin:
        return True, (f"challenger {challenger_score:.4f} beats champion {champion_score:.4f} by {difference:.4f} > margin {margin:.4f}")
    return False, (
        f"challenger {challenger_score:.4f} does not beat champion {champion_score:.4f} by more "
        f"than margin {margin:.4f} (difference {difference:+.4f})"
    )


def keep_unusable_champion(why: str) -> tuple[bool, str]:
    """(promoted, reason) when the champion cannot be loaded to be scored (``why``: its code fails
    the safety check, its files are gone). The challenger is not promoted: the one rule compares
    two scores on one benchmark, and a champion that cannot be scored gives none; whether to
    retire or repair it is a person's call, so the alias stays and the command says so."""
    return False, f"champion unusable: {why}"


def promotion_summary(decision: Decision, version: str, benchmark: dict[str, Any]) -> dict[str, Any]:
    """The ``model`` entry's fields once ``version`` was promoted by ``decision``: ``champion``,
    ``champion_version`` (who holds the alias now), ``previous_champion`` (the holder it was
    compared with, when another: its version and benchmark score), ``decision`` and
    ``benchmark`` (as given: run id, size, overlap)."""
    previous = None
    if decision.champion_version is not None and decision.champion_version != version:
        previous = {"version": decision.champion_version, "benchmark_score": decision.champion_score}
    return {
        "champion": decision.promoted,
        "champion_version": version if decision.promoted else decision.champion_version,
        "previous_champion": previous,
        "decision": decision.as_dict(),
        "benchmark": benchmark,
    }
