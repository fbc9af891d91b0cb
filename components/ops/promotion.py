"""The one promotion rule: when a challenger takes the champion's place.

Pure (no MLflow, no Prefect): every command that promotes (``attnlab train``, the retrain flow,
``attnlab sweep --register``) scores the challenger and the champion on the same benchmark
examples and asks :func:`decide`; the flows only fetch the scores and move the alias.

Rule: the challenger wins when there is no champion, or when
``challenger_score - champion_score > margin`` (the difference rounded to ``PRECISION`` decimals,
so float noise never decides). A NaN challenger never wins; a tie never wins; a champion whose
score is NaN loses to any number. A challenger that cannot be measured on the benchmark (see
:func:`incomparable_reason`) is not compared at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from attnlab.plugins import Example, Task
from attnlab.plugins.tokens import unit_name

#: Decimal places the score difference is rounded to before it is compared with the margin.
PRECISION = 9


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


def incomparable_reason(
    examples: list[Example],
    benchmark_task: str,
    task_name: str,
    test_task: Task,
    vocab_tokens: tuple[Collection[str], Collection[str]],
    max_source_length: int | None,
) -> str | None:
    """Why a model cannot be measured on the benchmark ``examples`` of task ``benchmark_task``,
    or None when it can.

    ``test_task`` is the challenger's test-time task (its options decide which sources it is
    meant for, its tokenizations how texts are cut into tokens), ``vocab_tokens`` the (source,
    target) tokens its vocabularies hold (a string: its characters) and ``max_source_length``
    the most source tokens its encoder accepts (None: no limit). A model is incomparable when
    the benchmark is of another task, has tokens its vocabularies lack, or sources longer than
    its task's test options or its encoder allow.
    """
    if benchmark_task != task_name:
        return f"the benchmark is of task {benchmark_task!r}, the model of task {task_name!r}"
    if not examples:
        return None
    sources = [test_task.source_tokens(ex.source) for ex in examples]
    for side, tokens, known, tokenization in (
        ("source", {t for seq in sources for t in seq}, vocab_tokens[0], test_task.source_tokenization),
        ("target", {t for ex in examples for t in test_task.target_tokens(ex.target)}, vocab_tokens[1], test_task.target_tokenization),
    ):
        missing = sorted(tokens - set(known))
        if missing:
            what = f"character(s) {''.join(missing)!r}" if tokenization == "characters" else f"token(s) {' '.join(missing)!r}"
            return f"the benchmark's {side}s use {what} outside this model's vocabulary"
    longest = max(len(seq) for seq in sources)
    unit = unit_name(test_task.source_tokenization)
    if longest > test_task.max_source_length:
        return (
            f"the benchmark has sources of up to {longest} {unit}; this config's task options "
            f"produce at most {test_task.max_source_length} (set test_task options to match the benchmark)"
        )
    if max_source_length is not None and longest > max_source_length:
        return f"the benchmark has sources of up to {longest} {unit}; this model's encoder accepts at most {max_source_length}"
    return None


def overlap(benchmark: Iterable[Example], training: Iterable[Example], key: Callable[[Example], str]) -> float:
    """Share of benchmark examples whose key also occurs in ``training`` (0 for no benchmark)."""
    benchmark = list(benchmark)
    seen = {key(ex) for ex in training}
    return sum(key(ex) in seen for ex in benchmark) / max(len(benchmark), 1)
