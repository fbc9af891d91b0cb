"""The dataset file: what is saved is what is loaded, also after the file is rewritten; a file
cut short, emptied, changed, of another key or of another format is told apart from a good one."""

from __future__ import annotations

import json

import pytest

from attnlab.data.datasets import UnusableData, checksum, entry_problem, load_splits, save_splits
from attnlab.data.splits import Splits
from attnlab.plugins import Example


def splits(target: str) -> Splits:
    return Splits(
        [Example("ab", target, ((1,), (0,))), Example("c", "c", None)],
        [Example("d", "d", ((0,),))],
        [Example("ef", "fe", ((1,), (0,)))],
    )


def test_saved_splits_load_back_equal_and_a_rewritten_file_is_read_again(tmp_path):
    path = save_splits(tmp_path / "data.json", splits("ba"))
    assert load_splits(path) == splits("ba")
    save_splits(path, splits("xyz"))  # same path, new content (and size): never the old examples
    assert load_splits(path).train[0].target == "xyz"


def test_each_load_hands_out_its_own_lists(tmp_path):
    path = save_splits(tmp_path / "data.json", splits("ba"))
    first = load_splits(path)
    first.train.reverse()
    first.test.clear()
    assert load_splits(path) == splits("ba")


KEY = "a" * 64


def test_a_good_file_stands_for_its_key_only(tmp_path):
    path = save_splits(tmp_path / "data.json", splits("ba"), KEY)
    assert entry_problem(path, KEY) is None
    assert entry_problem(path, "b" * 64) == f"holds the data of another key ({'a' * 12}, not {'b' * 12})"


def test_a_file_cut_short_or_emptied_is_not_valid_json(tmp_path):
    path = save_splits(tmp_path / "data.json", splits("ba"), KEY)
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    assert entry_problem(path, KEY).startswith("is not valid JSON, cut short or damaged (")
    with pytest.raises(UnusableData, match=f"the data file {path} is not valid JSON"):
        load_splits(path)
    path.write_text("")
    assert entry_problem(path, KEY).startswith("is not valid JSON")


def test_a_changed_example_fails_the_checksum(tmp_path):
    path = save_splits(tmp_path / "data.json", splits("ba"), KEY)
    path.write_text(path.read_text().replace('"ba"', '"bb"'))  # still valid JSON, another target
    assert entry_problem(path, KEY) == "fails its checksum: its content changed after it was written"


def test_empty_splits_with_a_good_checksum_are_refused(tmp_path):
    path = save_splits(tmp_path / "data.json", Splits([], [], [Example("a", "a", None)]), KEY)
    assert entry_problem(path, KEY) == "has empty train and validation splits"
    assert load_splits(path).train == []  # readable all the same: the rule is the cache's
    one = save_splits(tmp_path / "one.json", Splits([Example("a", "a", None)], [Example("b", "b", None)], []), KEY)
    assert entry_problem(one, KEY) == "has an empty test split"


def test_a_file_of_the_first_format_or_of_another_shape_is_refused(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps({"train": [["ab", "ba", None]], "validation": [], "test": []}))  # format 1
    assert entry_problem(path, KEY) == "is not a data file of format 2"
    body = json.dumps({"train": [["ab", 3, None]], "validation": [], "test": []})
    path.write_text(json.dumps({"format": 2, "key": KEY, "sha256": checksum(body), "splits": json.loads(body)}))
    assert entry_problem(path, KEY) == "does not hold train, validation and test examples"
    assert entry_problem(tmp_path / "missing.json", KEY).startswith("cannot be read (")


def test_a_file_swapped_for_another_keys_file_is_told_apart(tmp_path):
    mine = save_splits(tmp_path / "mine.json", splits("ba"), KEY)
    theirs = save_splits(tmp_path / "theirs.json", splits("xyz"), "b" * 64)
    mine.write_bytes(theirs.read_bytes())
    assert entry_problem(mine, KEY).startswith("holds the data of another key")
