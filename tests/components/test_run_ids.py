"""Run ids as typed: whole or a prefix; every id that fits no run or several named in one error."""

from __future__ import annotations

import pytest

from attnlab.lab.errors import UserError
from attnlab.ops.run_ids import find_runs, prefix_filter, run_id_key

RUNS = ["0a1b" + "0" * 28, "0a1c" + "1" * 28, "ffee" + "2" * 28]


def _find(given: list[str]) -> list[str]:
    return find_runs(
        given,
        lambda key: key if key in RUNS else None,
        lambda key: [run for run in RUNS if run.startswith(key)][:2],
        "sqlite:///store/mlflow.db",
    )


def test_a_run_id_is_hex_of_at_most_32_digits_in_any_case():
    assert run_id_key(" 0A1B ") == "0a1b"
    assert run_id_key("g123") is None and run_id_key("0" * 33) is None and run_id_key("") is None
    assert prefix_filter("0a1b") == "attributes.run_id LIKE '0a1b%'"


def test_whole_ids_and_unique_prefixes_name_their_runs_in_order():
    assert _find(["ffee", RUNS[0], "0A1C"]) == [RUNS[2], RUNS[0], RUNS[1]]


def test_every_unknown_or_ambiguous_id_is_named_in_one_error():
    with pytest.raises(UserError) as caught:
        _find(["0a1", "not-an-id", "ffee", "abcd", "f" * 32])
    message = str(caught.value)
    assert message.startswith("no run 'not-an-id', 'abcd', 'ffffffffffffffffffffffffffffffff' in sqlite:///store/mlflow.db; ")
    assert "'0a1' match(es) several runs: give more characters" in message
    assert message.endswith("(list runs with: attnlab runs)")
