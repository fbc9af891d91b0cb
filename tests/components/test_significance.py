"""Paired bootstrap resampling: hand-made cases pin what it reports."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from attnlab.evaluation.significance import (
    LEVEL,
    Outcomes,
    UnpairedItems,
    format_differences,
    paired_bootstrap,
    paired_items,
    run_items,
)


def outcomes(correct: list[int], edits: list[int] | None = None, tokens: list[int] | None = None) -> Outcomes:
    n = len(correct)
    edits = edits if edits is not None else [0 if c else 2 for c in correct]
    tokens = tokens if tokens is not None else [5] * n
    return Outcomes(np.array(correct, float), np.ones(n), np.array(edits, float), np.array(tokens, float))


def by_measure(differences):
    return {d.measure: d for d in differences}


def test_identical_outputs_give_no_difference_and_p_one():
    a = outcomes([1, 0, 1, 1, 0, 1, 0, 1])
    for d in paired_bootstrap(a, a, resamples=200):
        assert d.difference == 0 and d.mean == 0 and (d.low, d.high) == (0, 0)
        assert d.p_value == 1.0 and d.better is None


def test_a_dominated_run_gives_p_below_one_percent():
    rng = np.random.default_rng(3)
    weak = (rng.random(200) < 0.5).astype(int).tolist()
    strong = [1] * 200  # right wherever the weak one is, and more
    found = by_measure(paired_bootstrap(outcomes(weak), outcomes(strong)))
    assert found["exact_match"].difference > 0 and found["exact_match"].p_value < 0.01 and found["exact_match"].better == "b"
    for name in ("sequence_error_rate", "token_error_rate"):  # lower is better: B's errors are fewer
        assert found[name].difference < 0 and found[name].p_value < 0.01 and found[name].better == "b"
        assert found[name].high < 0  # the whole interval says B is better
    reverse = by_measure(paired_bootstrap(outcomes(strong), outcomes(weak)))
    assert reverse["exact_match"].better == "a" and reverse["exact_match"].p_value < 0.01


def test_the_interval_shrinks_with_more_items():
    pattern_a, pattern_b = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1], [1, 1, 1, 0, 0, 1, 1, 0, 1, 1]
    widths = []
    for repeats in (5, 20, 80):
        d = by_measure(paired_bootstrap(outcomes(pattern_a * repeats), outcomes(pattern_b * repeats)))["exact_match"]
        assert d.low <= d.difference <= d.high
        widths.append(d.high - d.low)
    assert widths[0] > widths[1] > widths[2]
    assert widths[0] / widths[2] == pytest.approx(4, rel=0.35)  # ~ 1 / sqrt(items)


def test_a_small_difference_on_few_items_is_not_significant():
    d = by_measure(paired_bootstrap(outcomes([1, 0, 1, 0, 1, 0]), outcomes([1, 1, 1, 0, 1, 0])))["exact_match"]
    assert d.p_value > LEVEL and d.better is None


def test_the_token_error_rate_is_a_ratio_of_sums_and_the_draws_are_seeded():
    a, b = outcomes([0, 1], edits=[3, 0], tokens=[2, 10]), outcomes([1, 1], edits=[0, 0], tokens=[2, 10])
    per = by_measure(paired_bootstrap(a, b, resamples=50))["token_error_rate"]
    assert per.a == pytest.approx(3 / 12) and per.b == 0.0 and per.difference == pytest.approx(-0.25)
    assert paired_bootstrap(a, b, resamples=50, seed=1) == paired_bootstrap(a, b, resamples=50, seed=1)


def test_items_pair_up_by_source_or_are_refused():
    table = pd.DataFrame({"source": ["x", "y", "z"], "correct": [True, False, True], "edits": [0, 2, 0], "tokens": [3, 3, 4]})
    shuffled = table.iloc[[2, 0, 1]]
    a, b = paired_items(run_items(table), run_items(shuffled))
    assert np.array_equal(a.hits, b.hits) and np.array_equal(a.tokens, b.tokens)
    other = table.assign(source=["x", "y", "w"])
    with pytest.raises(UnpairedItems, match=r"A and B were tested on different test splits \(3 and 3 sources, 2 in common\)"):
        paired_items(run_items(table), run_items(other))
    with pytest.raises(ValueError, match="no test items"):
        paired_bootstrap(outcomes([]), outcomes([]))


def test_the_block_names_each_measure_its_interval_and_the_better_run():
    text = format_differences(paired_bootstrap(outcomes([0] * 30), outcomes([1] * 30), resamples=100), ("aaa", "bbb"), 30, 100)
    assert "bbb against aaa (100 resamples of 30 test sources" in text
    line = next(line for line in text.splitlines() if line.startswith("exact_match"))
    assert line.split()[1:5] == ["0.0000", "1.0000", "+1.0000", "[+1.0000,"] and line.endswith("bbb better")
