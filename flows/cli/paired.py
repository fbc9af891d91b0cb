"""``attnlab compare``'s paired test: each run against the first on the same test sources
(:mod:`attnlab.evaluation.significance`), read from the runs' per-source outcome tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attnlab.flows.tracking.errors import UserError

if TYPE_CHECKING:
    from mlflow import MlflowClient


def paired_block(client: MlflowClient, records: list[dict[str, Any]], strict: bool, resamples: int) -> tuple[dict[str, Any], str]:
    """(the JSON's ``significance`` entries, the text block) of every run of ``records`` against
    the first. When there can be no paired test (a run without per-item outcomes, runs on
    different test splits) the block is one line saying why; with ``strict`` (``--paired``)
    that line is a UserError instead."""
    from attnlab.evaluation.significance import (
        OUTCOMES_ARTIFACT,
        UnpairedItems,
        format_differences,
        paired_bootstrap,
        paired_items,
        run_items,
    )
    from attnlab.flows.tracking.outcomes import run_outcomes
    from attnlab.lab.run_records import short_id

    if resamples < 1:
        raise UserError(f"--resamples {resamples}: give at least 1")
    names = [short_id(record["run_id"]) for record in records]
    tables = [run_outcomes(client, record["run_id"]) for record in records]
    why = None
    for record, name, table in zip(records, names, tables):
        if table is None and why is None:
            ended = record["status"] != "FINISHED"
            why = (f"run {name} ended {record['status']} without test outcomes" if ended else
                   f"run {name} predates per-item outcomes (no {OUTCOMES_ARTIFACT}), so it has no paired test; train it again for one")  # fmt: skip
    entries, blocks = [], []
    if why is None:
        first = run_items(tables[0])
        try:
            for name, table in zip(names[1:], tables[1:]):
                a, b = paired_items(first, run_items(table), (names[0], name))
                differences = paired_bootstrap(a, b, resamples)
                entries.append(
                    {"a": names[0], "b": name, "items": len(a), "resamples": resamples, "measures": [d.as_dict() for d in differences]}
                )
                blocks.append(format_differences(differences, (names[0], name), len(a), resamples))
        except UnpairedItems as exc:
            why = f"{exc}: a paired test needs runs tested on the same sources"
    if why is not None:
        if strict:
            raise UserError(why)
        return {"significance": None, "significance_refused": why}, f"paired test: none: {why}"
    return {"significance": entries}, "\n\n".join(blocks)
