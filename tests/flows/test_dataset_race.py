"""Two runs of a sweep that share a seed log the same splits as MLflow datasets: when both insert
the dataset at once, the second one's unique-key error is logged again (and then links the
dataset the first one made), not a failed run."""

from __future__ import annotations

import pytest
from mlflow.exceptions import MlflowException

from attnlab.flows.tracking.run_data import log_inputs, lost_dataset_race

#: What a sweep run got from the embedded store when another run inserted the dataset first.
SQLITE_RACE = (
    "(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.experiment_id, datasets.name, datasets.digest "
    "[SQL: INSERT INTO datasets (dataset_uuid, experiment_id, name, digest, dataset_source_type, dataset_source, "
    "dataset_schema, dataset_profile) VALUES (?, ?, ?, ?, ?, ?, ?, ?)]"
)
POSTGRES_RACE = '(psycopg2.errors.UniqueViolation) duplicate key value violates unique constraint "dataset_pk" ... INSERT INTO datasets'


class Client:
    """Raises ``errors`` in turn from log_inputs, then accepts; counts the calls."""

    def __init__(self, *errors: str) -> None:
        self.errors, self.calls = list(errors), 0

    def log_inputs(self, run_id: str, datasets: list) -> None:
        self.calls += 1
        if self.errors:
            raise MlflowException(self.errors.pop(0))


def test_a_lost_race_for_a_dataset_is_logged_again():
    client = Client(SQLITE_RACE)
    log_inputs(client, "run", [])  # type: ignore[arg-type]
    assert client.calls == 2


def test_other_errors_and_a_race_lost_every_time_are_raised():
    client = Client("RESOURCE_DOES_NOT_EXIST: run 'run' not found")
    with pytest.raises(MlflowException, match="not found"):
        log_inputs(client, "run", [])  # type: ignore[arg-type]
    assert client.calls == 1
    client = Client(SQLITE_RACE, SQLITE_RACE, SQLITE_RACE)
    with pytest.raises(MlflowException, match="UNIQUE constraint failed"):
        log_inputs(client, "run", [])  # type: ignore[arg-type]
    assert client.calls == 3


@pytest.mark.parametrize(
    ("message", "race"),
    [
        (SQLITE_RACE, True),
        (POSTGRES_RACE, True),
        ("(sqlite3.IntegrityError) UNIQUE constraint failed: runs.run_uuid", False),
        ("database is locked", False),
    ],
)
def test_only_the_datasets_unique_key_counts_as_a_lost_race(message, race):
    assert lost_dataset_race(MlflowException(message)) is race
