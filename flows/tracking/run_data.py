"""A run's data in MLflow: each split as a dataset input (name, digest, schema, profile), the
files a task read its data from, and the splits as one CSV (a sweep's runs share theirs on the
parent run)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pandas as pd
from mlflow.entities import Dataset, DatasetInput, InputTag
from mlflow.exceptions import MlflowException

from attnlab.data.splits import Splits
from attnlab.lab.config import ExperimentConfig
from attnlab.lab.run_records import DATA_SUMMARY_TAG, DATA_VERSION_TAG, SPLITS_TAG
from attnlab.plugins import Task
from attnlab.training.progress import PROGRESS_LOGGER
from mlflow import MlflowClient


def splits_frame(splits: Splits) -> pd.DataFrame:
    """All examples with their split: columns split, source, target."""
    rows = [(name, ex.source, ex.target) for name, examples in splits.items() for ex in examples]
    return pd.DataFrame(rows, columns=["split", "source", "target"])


def source_file_input(task: Task) -> list[DatasetInput]:
    """The files a task read its data from (the pairs task's ``files``: split -> (path, sha256))
    as MLflow dataset inputs named by the file and carrying its sha256 (context ``source`` for the
    training file, ``<split> source`` for a held-out split's); none for a task without files."""
    files: dict[str, tuple[str, str]] = getattr(task, "files", None) or {}
    inputs = []
    for split, (path, digest) in files.items():
        dataset = Dataset(name=Path(path).name, digest=digest[:36], source_type="local", source=json.dumps({"uri": Path(path).as_uri()}))
        context = "source" if split == "train" else f"{split} source"
        inputs.append(DatasetInput(dataset, [InputTag("mlflow.data.context", context)]))
    return inputs


def log_inputs(client: MlflowClient, run_id: str, inputs: list[DatasetInput], tries: int = 3) -> None:
    """``client.log_inputs``, again when it lost a race to create the same dataset. MLflow's store
    looks for an experiment's dataset (name, digest) and inserts it when absent, in two steps: the
    runs of a sweep that share a seed log the same splits, and two of them at once can both find
    none, so that the second insert fails on the datasets' unique key (the whole call rolled
    back). Logged again, it finds the dataset the first one made and links it to the run."""
    for attempt in range(1, tries + 1):
        try:
            client.log_inputs(run_id, datasets=inputs)
            return
        except MlflowException as exc:
            if attempt == tries or not lost_dataset_race(exc):
                raise


def lost_dataset_race(exc: MlflowException) -> bool:
    """True for the unique-key error of a dataset created at once by another run (SQLite's
    "UNIQUE constraint failed: datasets...", PostgreSQL's and MySQL's duplicate-key wording)."""
    text = str(exc).lower()
    return "datasets" in text and ("unique constraint" in text or "duplicate" in text)


def log_dataset(client: MlflowClient, run_id: str, config: ExperimentConfig, splits: Splits, shared_with: str | None = None) -> None:
    """Each split as an MLflow dataset input (name, digest, schema, profile) and all of them as
    ``data/splits.csv``.

    ``shared_with``: a sweep's parent run, whose runs share their data (one data set per seed for
    every combination). The CSV then goes to that run once per distinct content, as
    ``data/<sha256 prefix>/splits.csv``, and the run's tag :data:`SPLITS_TAG` names it
    (``runs:/<parent>/data/<digest>/splits.csv``)."""
    from mlflow.data.pandas_dataset import from_pandas  # what mlflow.data.from_pandas names

    frame = splits_frame(splits)
    inputs = []
    for split, part in frame.groupby("split", sort=False):
        dataset = from_pandas(
            part[["source", "target"]].reset_index(drop=True),
            name=f"{config.task}-{split}-seed{config.seed}",
            targets="target",
        )
        # MlflowClient.log_inputs takes entities (mlflow.log_input would need the active run).
        inputs.append(DatasetInput(Dataset(**dataset.to_dict()), [InputTag("mlflow.data.context", split)]))
    from attnlab.model.assembly import build_task

    task = build_task(config)
    inputs.extend(source_file_input(task))
    log_inputs(client, run_id, inputs)
    version, said = task.data_version(), task.data_summary()
    if version is not None:  # what a scheduled retrain compares (attnlab.ops.data_change)
        client.set_tag(run_id, DATA_VERSION_TAG, version)
    if said is not None:
        client.set_tag(run_id, DATA_SUMMARY_TAG, said)
        logging.getLogger(PROGRESS_LOGGER).info("data: %s", said)
    text = frame.to_csv(index=False)
    if shared_with is None:
        client.log_text(run_id, text, "data/splits.csv")
        return
    folder = f"data/{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if not any(item.path == f"{folder}/splits.csv" for item in client.list_artifacts(shared_with, folder)):
        client.log_text(shared_with, text, f"{folder}/splits.csv")  # two runs racing write the same bytes
    client.set_tag(run_id, SPLITS_TAG, f"runs:/{shared_with}/{folder}/splits.csv")
