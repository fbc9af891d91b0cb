"""Which runs a resumed sweep reuses: keys of config and data, the latest finished run of each."""

from __future__ import annotations

from attnlab.lab.config import ExperimentConfig
from attnlab.ops.sweep_resume import FinishedRun, reusable, run_key


def key(data_version: str | None = None, **changes) -> str:
    return run_key(ExperimentConfig(**changes).model_dump(mode="json"), data_version)


def test_a_key_names_everything_that_changes_what_is_trained():
    assert key() == key() and len(key()) == 16
    config = ExperimentConfig().model_dump(mode="json")
    assert run_key(dict(reversed(list(config.items()))), None) == key()  # order of the keys does not matter
    different = [key(seed=1), key(epochs=3), key(scorer="additive"), key(scorer_options={"heads": 2}), key("file sha 1")]
    assert len({key(), *different}) == 1 + len(different)
    assert key("file sha 1") != key("file sha 2")


def test_each_key_reuses_its_latest_finished_run_and_the_others_train():
    finished = [FinishedRun("old", "a", 100), FinishedRun("new", "a", 200), FinishedRun("b1", "b", 50), FinishedRun("z", "z", 10)]
    assert reusable(["a", "b", "c"], finished) == {0: "new", 1: "b1"}
    assert reusable(["c"], finished) == {}
    assert reusable(["a"], []) == {}
