"""The task contract, checked on every installed task plugin with attnlab.plugins.testing (what plugin
authors run)."""

from __future__ import annotations

import pytest

from attnlab.plugins import list_plugins, load_plugin
from attnlab.plugins.testing import check_plugin, check_task


@pytest.mark.parametrize("name", [name for name in list_plugins("tasks") if name != "pairs"])
def test_conformance_kit(name):
    check_task(load_plugin("tasks", name))
    assert check_plugin("tasks", name) is None  # what `attnlab plugins --check` runs


def test_a_task_that_needs_a_file_is_checked_with_one(tmp_path):
    # `attnlab plugins --check` cannot invent the file: it says so instead of marking it broken.
    assert check_plugin("tasks", "pairs") == "not checked: needs option(s) path"
    (tmp_path / "pairs.csv").write_text("source,target\nab,ba\nabc,cba\n")
    check_task(load_plugin("tasks", "pairs"), path=str(tmp_path / "pairs.csv"))


def test_conformance_kit_with_options():
    check_task(load_plugin("tasks", "reverse"), min_length=1, max_length=3, alphabet="ab")
    check_task(load_plugin("tasks", "date"), min_year=1999, max_year=1999)
    check_task(load_plugin("tasks", "date-formats"), formats=["dd/mm/yy", "weekday, d month yyyy"])
