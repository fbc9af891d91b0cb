"""The seed a retrain's challenger trains with."""

from __future__ import annotations


def challenger_seed(seed: int, benchmark_seed: int) -> int:
    """``seed``, or the next one when it is the benchmark's: the benchmark is drawn with its own
    seed, and that seed's training data would hold the benchmark's examples."""
    return seed + 1 if seed == benchmark_seed else seed
