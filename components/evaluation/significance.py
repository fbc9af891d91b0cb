"""Paired bootstrap resampling (Koehn 2004; sacrebleu's ``--paired-bs``): is system B's exact match,
sequence error rate (WER) or token error rate (PER) really different from system A's on the same
test items?

Each round draws the item indices once, with replacement (numpy's :class:`numpy.random.Generator`,
seeded), applies them to both systems and measures the difference B - A of every measure on that
resample. The report per measure: the difference on the whole test set, the mean difference over
the rounds, the 95% percentile interval of the rounds' differences, and as p-value the share of
rounds in which the order flips (the difference is 0 or of the other sign than on the whole set),
counted as (flips + 1) / (rounds + 1) so that it is never 0; identical outputs give no difference
and p = 1. The level a difference is called significant at: :data:`LEVEL`.

An item is a unit of resampling with sums of outcomes (:class:`Outcomes`): one test source of one
run (hits 0/1, count 1, the edits to its closest reference and that reference's tokens), or one
source over several seeds of an arm (the sums over the seeds), so the measures are ratios of sums
as the test metrics are (:mod:`attnlab.evaluation.edit_distance`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from attnlab.lab.metric_catalogue import LOWER, metric

#: The measures tested, in the order reported; which direction is better is the metric catalogue's
#: (:mod:`attnlab.lab.metric_catalogue`).
MEASURES = ("exact_match", "sequence_error_rate", "token_error_rate")
#: Rounds of resampling, and the generator's seed (a rerun reports the same numbers).
DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
#: A difference whose p-value is below this is significant.
LEVEL = 0.05
#: Rounds resampled at once (bounds the memory: rounds x items indices).
CHUNK_ITEMS = 4_000_000
#: A run's per-source outcome table (every test source, logged by the train flow) and its columns.
OUTCOMES_ARTIFACT = "tables/test_outcomes.json"
OUTCOME_COLUMNS = ("source", "correct", "edits", "tokens")


@dataclass(frozen=True)
class Outcomes:
    """Per item sums, each float [N]: hits (right outputs), count (outputs), edits (Levenshtein
    distance to the closest reference) and tokens (of that reference)."""

    hits: np.ndarray
    count: np.ndarray
    edits: np.ndarray
    tokens: np.ndarray

    def __len__(self) -> int:
        return len(self.hits)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> Outcomes:
        """From a frame with columns hits, count, edits, tokens (one row per item)."""
        return cls(*(frame[name].to_numpy(dtype=float) for name in ("hits", "count", "edits", "tokens")))

    def measures(self, index: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Each measure of :data:`MEASURES` on the items ``index`` picks (int [R, N]: one resample
        per row; None: the whole set, as [1]). float [R] each."""
        sums = [part[None, :] if index is None else part[index] for part in (self.hits, self.count, self.edits, self.tokens)]
        hits, count, edits, tokens = (part.sum(axis=1) for part in sums)
        with np.errstate(invalid="ignore", divide="ignore"):
            exact = hits / count
            return {"exact_match": exact, "sequence_error_rate": 1.0 - exact, "token_error_rate": edits / tokens}


@dataclass(frozen=True)
class Difference:
    """One measure of B against A: the values on the whole set, ``difference`` (B - A), the
    rounds' ``mean`` difference and 95% interval (``low``, ``high``), the ``p_value`` (share of
    rounds whose order flips), and ``better``: "a", "b" or None (no difference at :data:`LEVEL`)."""

    measure: str
    a: float
    b: float
    difference: float
    mean: float
    low: float
    high: float
    p_value: float
    better: str | None

    def as_dict(self) -> dict[str, float | str | None]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def paired_bootstrap(a: Outcomes, b: Outcomes, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> list[Difference]:
    """B against A on the same items (row i of ``a`` and of ``b`` is the same test item), one
    :class:`Difference` per measure of :data:`MEASURES`. ValueError for no items, items that do
    not pair up or fewer than one round."""
    if len(a) != len(b):
        raise ValueError(f"the two systems have {len(a)} and {len(b)} items: a paired test needs the same items")
    if len(a) == 0:
        raise ValueError("no test items to resample")
    if resamples < 1:
        raise ValueError(f"resamples {resamples}: give at least 1")
    generator = np.random.default_rng(seed)
    deltas: dict[str, list[np.ndarray]] = {name: [] for name in MEASURES}
    rounds = max(1, CHUNK_ITEMS // len(a))
    for start in range(0, resamples, rounds):
        index = generator.integers(0, len(a), size=(min(rounds, resamples - start), len(a)))
        on_a, on_b = a.measures(index), b.measures(index)
        for name in MEASURES:
            deltas[name].append(on_b[name] - on_a[name])
    whole_a, whole_b = a.measures(), b.measures()
    return [_difference(name, float(whole_a[name][0]), float(whole_b[name][0]), np.concatenate(deltas[name])) for name in MEASURES]


def _difference(name: str, a: float, b: float, deltas: np.ndarray) -> Difference:
    """The :class:`Difference` of measure ``name`` from its values on the whole set and the
    rounds' differences B - A (NaN rounds, resamples whose references hold no token, left out)."""
    deltas = deltas[~np.isnan(deltas)]
    observed = b - a
    if observed == 0 or not len(deltas):
        flips = len(deltas)
    else:
        flips = int(np.count_nonzero(deltas * np.sign(observed) <= 0))
    p_value = 1.0 if observed == 0 else (flips + 1) / (len(deltas) + 1)
    low, high = (float(v) for v in np.percentile(deltas, [2.5, 97.5])) if len(deltas) else (float("nan"), float("nan"))
    better = None
    if p_value < LEVEL:
        b_better = observed < 0 if metric(name).better == LOWER else observed > 0
        better = "b" if b_better else "a"
    return Difference(name, a, b, observed, float(deltas.mean()) if len(deltas) else float("nan"), low, high, p_value, better)


class UnpairedItems(ValueError):
    """Two runs' test items differ: no paired test."""


def run_items(table: pd.DataFrame) -> pd.DataFrame:
    """A run's per-source outcome table (:data:`OUTCOME_COLUMNS`) as items indexed by source:
    hits, count, edits, tokens."""
    return pd.DataFrame(
        {
            "hits": table["correct"].astype(float).to_numpy(),
            "count": 1.0,
            "edits": table["edits"].astype(float).to_numpy(),
            "tokens": table["tokens"].astype(float).to_numpy(),
        },
        index=pd.Index(table["source"].astype(str), name="source"),
    )


def paired_items(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str] = ("A", "B")) -> tuple[Outcomes, Outcomes]:
    """The items of ``a`` and ``b`` (frames of :func:`run_items` or :func:`pooled_items`) in one
    order; :class:`UnpairedItems` naming how they differ when their items are not the same."""
    if a.index.has_duplicates or b.index.has_duplicates:
        raise UnpairedItems("a test item appears twice in one run's outcomes")
    if len(a) != len(b) or not a.index.equals(b.index) and set(a.index) != set(b.index):
        common = len(a.index.intersection(b.index))
        raise UnpairedItems(
            f"{names[0]} and {names[1]} were tested on different test splits ({len(a):,} and {len(b):,} sources, {common:,} in common)"
        )
    return Outcomes.from_frame(a), Outcomes.from_frame(b.loc[a.index])


def format_differences(differences: list[Difference], names: tuple[str, str], items: int, resamples: int) -> str:
    """One block per pair of runs: each measure's values, the difference B - A with its 95%
    interval and p-value, and which run is better at :data:`LEVEL` (``n.s.``: neither)."""
    a, b = names
    lines = [
        f"paired bootstrap, {b} against {a} ({resamples:,} resamples of {items:,} test sources; p: share of resamples whose order flips):"
    ]
    rows = [["measure", a, b, "difference", "95% interval", "p", ""]]
    for d in differences:
        better = {"a": f"{a} better", "b": f"{b} better", None: "n.s."}[d.better]
        rows.append(
            [d.measure, f"{d.a:.4f}", f"{d.b:.4f}", f"{d.difference:+.4f}", f"[{d.low:+.4f}, {d.high:+.4f}]", f"{d.p_value:.3f}", better]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += [
        "  ".join(cell.ljust(w) if i in (0, 6) else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in rows
    ]
    return "\n".join(lines)
