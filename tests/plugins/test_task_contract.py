"""The task contract, checked on every installed task plugin with attnlab.plugins.testing (what plugin
authors run)."""

from __future__ import annotations

import pytest

from attnlab.plugins import list_plugins, load_plugin
from attnlab.plugins.testing import check_plugin, check_task


@pytest.mark.parametrize("name", list_plugins("tasks"))
def test_conformance_kit(name):
    check_task(load_plugin("tasks", name))
    assert check_plugin("tasks", name) is None  # what `attnlab plugins --check` runs


def test_conformance_kit_with_options():
    check_task(load_plugin("tasks", "reverse"), min_length=1, max_length=3, alphabet="ab")
    check_task(load_plugin("tasks", "date"), min_year=1999, max_year=1999)
    check_task(load_plugin("tasks", "date-formats"), formats=["dd/mm/yy", "weekday, d month yyyy"])
