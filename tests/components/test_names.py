"""The names attnlab gives a task's things in MLflow: one rule, read by every command."""

from __future__ import annotations

from attnlab.lab.names import check_name, experiment_name, model_name


def test_a_task_has_one_registered_model_and_one_default_experiment_of_its_name():
    assert model_name("date") == "attnlab-date"
    assert experiment_name("reverse") == "attnlab-reverse"
    assert experiment_name("sweeps") == "attnlab-sweeps"


def test_a_task_reading_a_file_has_a_registered_model_per_file():
    assert model_name("pairs", "/data/lexicon.csv") == "attnlab-pairs-lexicon"
    assert model_name("pairs", "my words (v2).final.tsv") == "attnlab-pairs-my-words-v2-.final"
    assert model_name("pairs", "/data/...csv") == "attnlab-pairs"  # nothing of the name is left: the task's
    assert check_name(model_name("pairs", "x" * 300 + ".csv")) == "attnlab-pairs-" + "x" * 114


def test_a_config_names_its_registered_model_and_a_given_name_wins():
    from attnlab.lab.config import ExperimentConfig

    assert ExperimentConfig().registered_model() == "attnlab-date"
    lexicon = ExperimentConfig(task="pairs", task_options={"path": "lexicon.csv"})
    assert lexicon.registered_model() == "attnlab-pairs-lexicon"
    assert lexicon.model_copy(update={"model_name": "g2p"}).registered_model() == "g2p"


def test_the_names_are_safe_folder_names():
    assert check_name(experiment_name("date")) == "attnlab-date"
