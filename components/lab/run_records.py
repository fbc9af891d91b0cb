"""A run as the core reads it: the record the flows make of an MLflow run, the names of the tags
attnlab writes on its runs, and how tables show a run's id and start.

Every attnlab run tag is named here once; the flows write them (:mod:`attnlab.flows.tracking`),
the core's tables read them (:mod:`attnlab.ops.run_listing`, :mod:`attnlab.evaluation.run_compare`).
The tags an operating rule reads live with that rule: a run's owner and heartbeat
(:mod:`attnlab.ops.stale_runs`), a sweep's attempts (:mod:`attnlab.ops.sweep_attempts`) and run key
(:mod:`attnlab.ops.sweep_resume`).

A run record::

    {"run_id": str, "run_name": str, "experiment": str, "status": str,
     "start_time": int | None (ms since the epoch), "tags": {str: str}, "params": {str: str},
     "metrics": {str: float}}

Pure: the standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

Record = Mapping[str, Any]

# --------------------------------------------------------------------------- run tags

#: The registered model a run's model goes to (``attnlab-<task>``, ``--model-name``).
MODEL_NAME_TAG = "attnlab.model_name"
#: The digest of the data a run's task read (two versions of one file tell apart).
DATA_VERSION_TAG = "attnlab.data_version"
#: The run's data in one line (rows read, kept, dropped).
DATA_SUMMARY_TAG = "attnlab.data_summary"
#: Where the run's split files are (``runs:/<id>/data/<sha256 prefix>/splits.csv``).
SPLITS_TAG = "attnlab.splits"
#: The latest epoch a run logged (a sweep's progress lines read it).
EPOCH_TAG = "attnlab.epoch"
#: Which weights a run kept, in words with the rule.
SELECTION_TAG = "attnlab.selection"
#: Why a run stopped, in one line; and who ended it when it was not its own process.
ERROR_TAG = "attnlab.error"
ENDED_BY_TAG = "attnlab.ended_by"
#: What kind of run it is when not a train run (``retrain``, ``benchmark``).
KIND_TAG = "attnlab.kind"
#: A sweep's parent run (``parent``).
SWEEP_TAG = "attnlab.sweep"
#: Why a scheduled retrain did not train (its data was already trained on); absent when it did.
RETRAIN_SKIPPED_TAG = "attnlab.retrain.skipped"
#: The champion's run (``true``; moved with the alias), a column of the MLflow UI's saved view.
CHAMPION_TAG = "attnlab.champion"
#: Tag of a champion version that a promotion could not load, with why (``attnlab runs`` shows it).
UNUSABLE_TAG = "attnlab.unusable"

# --------------------------------------------------------------------------- shown in tables

#: Characters of a run id shown in tables (enough to tell runs apart; ``attnlab compare`` takes it).
SHORT_ID = 8
#: Characters of a data digest shown in tables (two versions of one file tell apart).
SHORT_DIGEST = 8


def short_id(run_id: str) -> str:
    return run_id[:SHORT_ID]


def started(start_time: int | None) -> str:
    """A run's start (ms since the epoch) as ``YYYY-MM-DD HH:MM:SS`` in UTC; ``""`` when unknown."""
    if start_time is None:
        return ""
    return datetime.fromtimestamp(start_time / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
