"""Registry retention in MLflow: after a retrain's promotion, delete the versions of the
registered model that :func:`attnlab.ops.retention.to_prune` names, under the promotion lock (so the
champion cannot move meanwhile), and record them on the retrain run.

Deleting a model version removes it from the registry only: its training run, the logged model
and their files stay, so a pruned version can be registered again from the source recorded in the
retrain run's ``retention/pruned.json``.

Records on the retrain run: param ``keep``, tag ``retention.pruned`` (the pruned version numbers,
``none`` when nothing was pruned), metric ``pruned_versions`` (how many) and, when any were
pruned, the artifact ``retention/pruned.json`` (each version's run, model id and source). The
training run of a pruned version gets the tag ``retention.pruned``, naming the version.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from mlflow.entities import Metric, RunTag
from mlflow.entities.model_registry import ModelVersion
from mlflow.exceptions import MlflowException

from attnlab.flows.tracking import registry as model_registry
from attnlab.flows.tracking.promote import TAG
from attnlab.ops.retention import VersionRecord, previous_champion, to_prune
from mlflow import MlflowClient

#: The tag and metric of a retrain run (and the tag of a pruned version's training run).
PRUNED_TAG = "retention.pruned"
PRUNED_METRIC = "pruned_versions"
#: The retrain run's artifact listing what was pruned and how to register it again.
PRUNED_ARTIFACT = "retention/pruned.json"


def record_of(version: ModelVersion) -> VersionRecord:
    """The retention record of an MLflow model version, from its ``promotion.*`` tags."""
    tags = version.tags or {}
    decision = tags.get(TAG + "promoted")
    compared = tags.get(TAG + "champion_version", "")
    return VersionRecord(int(version.version), decision is not None, decision == "true", int(compared) if compared.isdigit() else None)


def all_versions(client: MlflowClient, name: str) -> list[ModelVersion]:
    """Every (not deleted) version of registered model ``name``, all pages."""
    found: list[ModelVersion] = []
    token: str | None = None
    while True:
        page = client.search_model_versions(f"name='{name}'", page_token=token)
        found.extend(page)
        token = page.token
        if not token:
            return found


def prune(client: MlflowClient, name: str, keep: int) -> list[dict[str, Any]]:
    """Delete the versions of ``name`` that retention prunes (call it under the promotion lock);
    what each was (version, run_id, model_id, source), oldest first."""
    versions = {int(v.version): v for v in all_versions(client, name)}
    records = [record_of(v) for v in versions.values()]
    holder = model_registry.champion_version(client, name)
    champion = None if holder is None else int(holder.version)
    pruned = []
    for number in to_prune(records, keep, champion, previous_champion(champion, records)):
        version = versions[number]
        pruned.append(
            {"version": str(number), "run_id": version.run_id, "model_id": getattr(version, "model_id", None), "source": version.source}
        )
        client.delete_model_version(name, str(number))
    return pruned


def record_pruning(client: MlflowClient, run_id: str, name: str, pruned: list[dict[str, Any]]) -> None:
    """What was pruned, on the retrain run and on each pruned version's training run."""
    numbers = ", ".join(p["version"] for p in pruned) or "none"
    client.log_batch(
        run_id,
        metrics=[Metric(PRUNED_METRIC, float(len(pruned)), int(time.time() * 1000), 0)],
        tags=[RunTag(PRUNED_TAG, numbers[:4000])],
    )
    if not pruned:
        return
    restore = "MlflowClient().create_model_version(name, source, run_id=run_id, model_id=model_id) registers one again"
    client.log_dict(run_id, {"registered_model": name, "pruned": pruned, "restore": restore}, PRUNED_ARTIFACT)
    for entry in pruned:
        with contextlib.suppress(MlflowException):  # its run may have been deleted since
            client.set_tag(entry["run_id"], PRUNED_TAG, f"{name} version {entry['version']}, by retrain run {run_id}")
