"""The champion's run carries the tag ``attnlab.champion`` and it moves with the alias, in a
real embedded store: set when a promotion moves the alias, removed from the previous champion's
run, untouched when the challenger loses."""

from __future__ import annotations

import contextlib
from pathlib import Path

from _flowkit import client_for

from attnlab.flows.tracking import promote as promotion
from attnlab.flows.tracking import registry as model_registry
from attnlab.lab.run_records import CHAMPION_TAG

NAME = "attnlab-date"


def versions(client, folder: Path, labels: str) -> tuple[dict[str, str], dict[str, str]]:
    """One run and one registered version per label: (version by label, run id by label)."""
    experiment = client.create_experiment("champions", artifact_location=(folder / "artifacts").as_uri())
    client.create_registered_model(NAME)
    runs = {label: client.create_run(experiment, run_name=label).info.run_id for label in labels}
    made = {label: client.create_model_version(NAME, source="file:///nowhere", run_id=runs[label]).version for label in labels}
    return {label: str(version) for label, version in made.items()}, runs


def promote(client, version: str, score: float, scores: dict[str, float]):
    scores[version] = score
    return promotion.compare_and_set(client, NAME, version, scores.__getitem__, 0.0, contextlib.nullcontext)


def tagged(client, runs: dict[str, str]) -> list[str]:
    return [label for label, run in runs.items() if client.get_run(run).data.tags.get(CHAMPION_TAG) == "true"]


def test_the_champion_tag_moves_with_the_alias(empty_store):
    client = client_for(empty_store)
    version, runs = versions(client, empty_store, "ABC")
    scores: dict[str, float] = {}
    assert promote(client, version["A"], 0.5, scores).promoted
    assert tagged(client, runs) == ["A"]
    assert promote(client, version["B"], 0.9, scores).promoted
    assert tagged(client, runs) == ["B"]  # removed from the previous champion's run
    assert str(model_registry.champion_version(client, NAME).version) == version["B"]
    assert not promote(client, version["C"], 0.7, scores).promoted
    assert tagged(client, runs) == ["B"]
    assert promote(client, version["B"], 0.9, scores).promoted  # a retried promotion keeps it
    assert tagged(client, runs) == ["B"]


def test_a_version_without_a_run_takes_the_alias_and_the_old_tag_goes(empty_store):
    client = client_for(empty_store)
    version, runs = versions(client, empty_store, "A")
    scores: dict[str, float] = {}
    assert promote(client, version["A"], 0.5, scores).promoted
    runless = str(client.create_model_version(NAME, source="file:///nowhere").version)
    assert promote(client, runless, 0.9, scores).promoted
    assert tagged(client, runs) == []
