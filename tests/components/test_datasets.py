"""The dataset file: what is saved is what is loaded, also after the file is rewritten."""

from __future__ import annotations

from attnlab.data.datasets import load_splits, save_splits
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
