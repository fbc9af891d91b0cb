"""A challenger never trains with the seed its benchmark was drawn with."""

from __future__ import annotations

from attnlab.ops.challenger import challenger_seed


def test_the_benchmarks_seed_is_skipped_and_any_other_kept():
    assert challenger_seed(7, benchmark_seed=7) == 8
    assert challenger_seed(7, benchmark_seed=3) == 7
