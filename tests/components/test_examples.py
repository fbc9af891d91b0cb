"""Tests for attnlab.data.examples.gold_alignments: the gold of the examples a run plots."""

from attnlab.data.examples import gold_alignments
from attnlab.plugins import Example

EXAMPLES = [
    Example("25-12-2023", "2023年12月25日", ((6,), (7,), (8,), (9,), (), (3,), (4,), (), (0,), (1,), ())),
    Example("ab", "ba", None),  # a task that does not know its alignment
    Example("25-12-2023", "other", ((0,),)),  # same source, other target
]


def test_gold_is_looked_up_by_source_and_target_as_json_lists():
    sources = ["25-12-2023", "ab", "25-12-2023", "unseen"]
    targets = ["2023年12月25日", "ba", "other", "x"]
    golds = gold_alignments(EXAMPLES, sources, targets)
    assert golds[0] == [[6], [7], [8], [9], [], [3], [4], [], [0], [1], []]
    assert golds[1:] == [None, [[0]], None]
