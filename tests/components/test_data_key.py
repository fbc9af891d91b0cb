"""The data cache's key: equal inputs share a file; the data spec, the task plugin's version and
the file format each name another."""

from __future__ import annotations

from attnlab.data.data_key import DATA_FORMAT, data_file_name, data_key, task_plugin_version
from attnlab.data.datasets import data_spec
from attnlab.lab.config import ExperimentConfig

SPEC = data_spec(ExperimentConfig(train_size=30, validation_size=10, test_size=10, seed=123))


def test_equal_inputs_name_one_file_whatever_the_key_order():
    name = data_file_name(SPEC, "attnlab 0.1.0")
    assert name.startswith("date-") and name.endswith(".json") and len(name) == len("date-") + 20 + len(".json")
    assert data_file_name(dict(reversed(list(SPEC.items()))), "attnlab 0.1.0") == name


def test_the_spec_the_plugin_version_and_the_format_each_change_the_name():
    name = data_file_name(SPEC, "attnlab 0.1.0")
    others = {
        data_file_name({**SPEC, "seed": 124}, "attnlab 0.1.0"),
        data_file_name(SPEC, "attnlab 0.2.0"),
        data_file_name(SPEC, "attnlab 0.1.0", DATA_FORMAT + 1),
    }
    assert name not in others and len(others) == 3


def test_the_plugin_version_names_the_distribution_of_an_installed_task():
    assert task_plugin_version("date").startswith("attnlab ")
    assert task_plugin_version("no-such-task") == "unknown"


def test_the_file_name_is_the_start_of_the_key_the_file_records():
    key = data_key(SPEC, "attnlab 0.1.0")
    assert len(key) == 64 and data_file_name(SPEC, "attnlab 0.1.0") == f"date-{key[:20]}.json"
