"""The edit-distance metrics on hand-made cases whose answers were worked out by hand."""

from __future__ import annotations

import math

import pytest

from attnlab.evaluation.edit_distance import closest_reference, sequence_error_rate, token_error_rate


def test_kitten_to_sitting_is_three_edits_over_seven_reference_characters():
    # k->s, e->i, +g
    assert closest_reference("kitten", ["sitting"]) == (3, "sitting")
    assert token_error_rate(["kitten"], [["sitting"]]) == pytest.approx(3 / 7)


def test_exact_matches_score_zero():
    outputs = ["2024-01-31", "abc"]
    assert token_error_rate(outputs, [[o] for o in outputs]) == 0.0
    assert sequence_error_rate(outputs, [[o] for o in outputs]) == 0.0


def test_an_empty_output_misses_every_reference_token():
    assert token_error_rate([""], [["abc"]]) == 1.0
    assert sequence_error_rate([""], [["abc"]]) == 1.0


def test_the_closest_of_several_references_is_used():
    # "abcd" is 4 edits from "wxyz" and 1 from "abce": the second reference counts.
    assert closest_reference("abcd", ["wxyz", "abce"]) == (1, "abce")
    assert token_error_rate(["abcd"], [["wxyz", "abce"]]) == pytest.approx(1 / 4)


def test_a_tie_goes_to_the_shorter_reference_then_the_first_listed():
    # "ab" is 1 edit from "abc" (3 tokens) and from "a" (1 token): the shorter one, rate 1/1.
    assert closest_reference("ab", ["abc", "a"]) == (1, "a")
    assert token_error_rate(["ab"], [["abc", "a"]]) == 1.0
    assert closest_reference("ab", ["ay", "ax"]) == (1, "ay")


def test_the_rate_is_the_sum_of_distances_over_the_sum_of_lengths_not_a_mean_of_ratios():
    # distances 1 and 0 over lengths 1 and 10: 1/11 (a mean of ratios would say (1/1 + 0/10) / 2 = 0.5)
    assert token_error_rate(["a", "abcdefghij"], [["b"], ["abcdefghij"]]) == pytest.approx(1 / 11)


def test_tokens_may_be_longer_than_one_character():
    # phonemes: one substituted token of two (as characters, "aab" vs "aac" would be 1/3)
    assert token_error_rate([["aa", "b"]], [[["aa", "c"]]]) == pytest.approx(1 / 2)
    assert token_error_rate([["k", "ae", "t"]], [[["k", "ae", "t", "s"]]]) == pytest.approx(1 / 4)
    assert sequence_error_rate([["k", "ae", "t"]], [[["k", "ae", "t", "s"], ["k", "ae", "t"]]]) == 0.0
    assert sequence_error_rate(["ab"], [[["a", "b"]]]) == 0.0  # a string's tokens are its characters


def test_the_rate_can_exceed_one_when_the_output_is_longer():
    assert token_error_rate(["abcd"], [["a"]]) == 3.0


def test_sequence_error_rate_counts_outputs_matching_no_reference():
    outputs = ["ab", "cd", "x"]
    references = [["ab"], ["ce", "cd"], ["y"]]  # right, right by its second reference, wrong
    assert sequence_error_rate(outputs, references) == pytest.approx(1 / 3)


def test_no_examples_is_nan_and_malformed_references_are_refused():
    assert math.isnan(token_error_rate([], []))
    assert math.isnan(sequence_error_rate([], []))
    assert math.isnan(token_error_rate([""], [[""]]))
    with pytest.raises(ValueError, match="one list per output"):
        token_error_rate(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="at least one reference"):
        sequence_error_rate(["a"], [[]])
    with pytest.raises(ValueError, match="at least one reference"):
        closest_reference("a", [])
