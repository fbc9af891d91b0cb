"""A sweep's arms against its best arm: paired bootstrap resampling
(:mod:`attnlab.evaluation.significance`) of each arm's outcomes against the best one's, the seeds
of an arm pooled.

How seeds pool: when every seed of the sweep tested on the same sources (a corpus task: its test
split is the same for every seed), an item is one source and its outcomes are summed over the
seeds, so resampling draws sources, as the field's tests do, and the seeds' runs of one source
move together; when each seed drew its own test split (a generated task), an item is one source
of one seed, paired only with the same seed's run of the other arm. Two arms are compared on the
seeds both have outcomes for.

Pure: each run's outcome table arrives as a DataFrame (:data:`attnlab.evaluation.significance.OUTCOME_COLUMNS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from attnlab.evaluation.significance import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    LEVEL,
    MEASURES,
    UnpairedItems,
    paired_bootstrap,
    paired_items,
    run_items,
)
from attnlab.lab.metric_catalogue import SIGNIFICANCE, metric

#: seed -> that seed's run's outcome table, for one arm.
SeedTables = Mapping[int, pd.DataFrame]
#: How a comparison pooled the seeds, in words (the table's note says it).
POOLING = {
    True: "the seeds' outcomes summed per test source (the same test split for every seed)",
    False: "paired within each seed (each seed draws its own test split)",
}


def same_split(arms: Mapping[str, SeedTables]) -> bool:
    """True when every run of every arm tested on the same set of sources."""
    sets = {frozenset(table["source"].astype(str)) for tables in arms.values() for table in tables.values()}
    return len(sets) <= 1


def pooled_items(tables: SeedTables, seeds: list[int], by_source: bool) -> pd.DataFrame:
    """The items of one arm over ``seeds`` (see the module docstring): summed per source when
    ``by_source``, else one item per (seed, source), indexed ``"<seed>:<source>"``."""
    frames = []
    for seed in seeds:
        items = run_items(tables[seed])
        if not by_source:
            items.index = pd.Index([f"{seed}:{source}" for source in items.index], name="item")
        frames.append(items)
    joined = pd.concat(frames)
    return joined.groupby(level=0, sort=True).sum() if by_source else joined.sort_index()


def best_arm(arms: Mapping[str, SeedTables]) -> str | None:
    """The arm with the highest exact match over all its runs' outcomes (the first listed on a
    tie); None when no arm has outcomes."""
    scores = {}
    for label, tables in arms.items():
        if tables:
            hits = sum(float(table["correct"].sum()) for table in tables.values())
            scores[label] = hits / sum(len(table) for table in tables.values())
    return max(scores, key=lambda label: scores[label]) if scores else None


def against_best(arms: Mapping[str, SeedTables], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Each arm against the best one (:func:`best_arm`): ``{best, level, resamples, pooling,
    arms: [{label, seeds, items, measures: {name: Difference as dict} | None, note}]}``, the
    differences being arm - best. An arm without outcomes, or sharing no seed with the best,
    has ``measures`` None and a ``note`` saying why."""
    best = best_arm(arms)
    by_source = same_split(arms)
    rows = []
    for label, tables in arms.items():
        row: dict[str, Any] = {"label": label, "seeds": sorted(tables), "items": 0, "measures": None, "note": None}
        if best is None or not tables:
            row["note"] = "no per-item outcomes (runs that failed, or were logged before attnlab recorded them)"
        elif label != best:
            seeds = sorted(set(tables) & set(arms[best]))
            if not seeds:
                row["note"] = f"no seed in common with {best}"
            else:
                try:
                    ours, theirs = paired_items(pooled_items(arms[best], seeds, by_source), pooled_items(tables, seeds, by_source))
                except UnpairedItems as exc:
                    row["note"] = str(exc)
                else:
                    differences = paired_bootstrap(ours, theirs, resamples, seed)
                    row.update(seeds=seeds, items=len(ours), measures={d.measure: d.as_dict() for d in differences})
        rows.append(row)
    return {"best": best, "level": LEVEL, "resamples": resamples, "pooling": POOLING[by_source], "arms": rows}


def headings() -> dict[str, str]:
    """Measure -> its heading in the table (the catalogue's ``significance`` place, else its
    name), in the order of :data:`attnlab.evaluation.significance.MEASURES`."""
    return {name: metric(name).shown.get(SIGNIFICANCE, name) for name in MEASURES}


def verdict(measure: dict[str, Any] | None) -> str:
    """One cell: ``worse (p=0.001)``, ``better (p=...)`` or ``same (p=0.31)`` (arm against the best)."""
    if measure is None:
        return "-"
    word = {"a": "worse", "b": "better", None: "n.s."}[measure["better"]]
    return f"{word} (p={measure['p_value']:.3f})"


def format_marks(marks: dict[str, Any]) -> str:
    """The table of :func:`against_best`: one row per arm, a cell per measure, and what it means."""
    if marks["best"] is None:
        return "significance: no run logged per-item outcomes"
    rows = []
    for arm in marks["arms"]:
        cells = {"combination": arm["label"]}
        for name, short in headings().items():
            if arm["label"] == marks["best"]:
                cells[short] = "best"
            else:
                cells[short] = verdict((arm["measures"] or {}).get(name)) if arm["measures"] else "-"
        rows.append(cells)
    table = [list(rows[0])] + [list(row.values()) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    text = "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in table)
    notes = [f"  {arm['label']}: {arm['note']}" for arm in marks["arms"] if arm["note"]]
    head = (
        f"against the best arm ({marks['best']}): paired bootstrap, {marks['resamples']:,} resamples, "
        f"significantly worse or better at p < {marks['level']} (n.s.: not significant); {marks['pooling']}"
    )
    return head + "\n" + text + ("\n" + "\n".join(notes) if notes else "")
