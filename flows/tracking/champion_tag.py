"""The champion's run, marked in the MLflow runs table.

The run that trained the model version holding the ``champion`` alias carries the tag
``attnlab.champion = true``: a column of attnlab's saved runs view
(:mod:`attnlab.flows.tracking.mlflow_ui`), and a filter, ``tags.`attnlab.champion` = 'true'``.
:func:`attnlab.flows.tracking.promote.compare_and_set` moves it with the alias, under the same lock.
"""

from __future__ import annotations

from mlflow.entities import LifecycleStage
from mlflow.entities.model_registry import ModelVersion

from attnlab.lab.run_records import CHAMPION_TAG
from mlflow import MlflowClient

#: The value of :data:`CHAMPION_TAG` on the champion's run.
CHAMPION_VALUE = "true"


def move_champion_tag(client: MlflowClient, name: str, version: str, previous: ModelVersion | None) -> None:
    """Tag the run of registered ``name`` version ``version`` (the new champion) and untag the
    run of ``previous``, the version that held the alias (None for the first champion). A
    version registered without a run has nothing to tag; a deleted run is left as it is."""
    new_run = client.get_model_version(name, version).run_id
    old_run = previous.run_id if previous is not None else None
    if old_run and old_run != new_run:
        run = client.get_run(old_run)
        if run.info.lifecycle_stage == LifecycleStage.ACTIVE and CHAMPION_TAG in run.data.tags:
            client.delete_tag(old_run, CHAMPION_TAG)
    if new_run and client.get_run(new_run).info.lifecycle_stage == LifecycleStage.ACTIVE:
        client.set_tag(new_run, CHAMPION_TAG, CHAMPION_VALUE)
