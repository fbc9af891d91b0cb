"""The length-normalised ranking that benchmarks/length_penalty_wer.py measured (and found no
gain in: docs/cmudict-recipe.md): beam search's final hypotheses ranked by summed
log-probability / length ** alpha, among those that ended."""

from __future__ import annotations

import math

import torch
from benchmark_scripts import benchmark_script

from attnlab.data.vocab import EOS, PAD
from attnlab.model.decode import Beams

length_normalised_best = benchmark_script("length_penalty_wer").length_normalised_best

A, B, C = 10, 11, 12  # token ids of outputs, EOS and PAD aside


def beams(rows: list[list[tuple[list[int], float]]]) -> Beams:
    """Beams from each source's hypotheses (tokens, summed log-probability), best first."""
    width = max(len(tokens) for row in rows for tokens, _ in row)
    tokens = torch.tensor([[tokens + [PAD] * (width - len(tokens)) for tokens, _ in row] for row in rows])
    return Beams(tokens, torch.tensor([[score for _, score in row] for row in rows]))


def test_a_longer_output_wins_once_its_score_per_token_is_higher():
    # "A EOS" (2 tokens, -1.0) against "A B C EOS" (4 tokens, -1.6): per token -0.5 against -0.4.
    short, long = ([A, EOS], -1.0), ([A, B, C, EOS], -1.6)
    found = beams([[short, long]])
    assert length_normalised_best(found, 0.0).tolist() == [[A, EOS, PAD, PAD]]
    assert length_normalised_best(found, 1.0).tolist() == [[A, B, C, EOS]]
    # alpha 0.5: -1.0 / sqrt(2) = -0.707 still beats -1.6 / 2 = -0.8
    assert -1.0 / math.sqrt(2) > -1.6 / 2
    assert length_normalised_best(found, 0.5).tolist() == [[A, EOS, PAD, PAD]]


def test_each_source_is_ranked_on_its_own():
    first = [([A, EOS], -1.0), ([A, B, C, EOS], -1.6)]
    second = [([B, C, A, EOS], -0.4), ([C, EOS], -0.3)]
    assert length_normalised_best(beams([first, second]), 1.0).tolist() == [[A, B, C, EOS], [B, C, A, EOS]]


def test_a_hypothesis_without_eos_is_passed_over_unless_none_ended():
    unfinished, ended = ([A, B, C, A], -0.8), ([A, EOS, PAD, PAD], -1.0)
    assert length_normalised_best(beams([[unfinished, ended]]), 1.0).tolist() == [[A, EOS, PAD, PAD]]
    cut_off = ([B, B, B, B], -2.0)  # a search stopped by max_length: none ended
    assert length_normalised_best(beams([[cut_off, unfinished]]), 1.0).tolist() == [[A, B, C, A]]
