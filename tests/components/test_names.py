"""The names attnlab gives a task's things in MLflow: one rule, read by every command."""

from __future__ import annotations

from attnlab.lab.names import check_name, experiment_name, model_name


def test_a_task_has_one_registered_model_and_one_default_experiment_of_its_name():
    assert model_name("date") == "attnlab-date"
    assert experiment_name("reverse") == "attnlab-reverse"
    assert experiment_name("sweeps") == "attnlab-sweeps"


def test_the_names_are_safe_folder_names():
    assert check_name(experiment_name("date")) == "attnlab-date"
