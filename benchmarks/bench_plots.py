"""What writing a run's attention heatmaps costs: one example's heatmap and a four-head grid of
a date example (11 source tokens, 12 output tokens, gold outlined), drawn and saved as
:func:`attnlab.viz.heatmaps.save_figure` saves them (the constrained layout alone) beside the
same figures saved with a tight bounding box, which draws each figure twice; the median CPU
seconds of ``--repeats`` figures each, the two ways in turn (``bench_attention.median_seconds``).

Run: python benchmarks/bench_plots.py [--repeats 25]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_attention import median_seconds

from attnlab.viz.heatmaps import attention_heatmap, head_heatmaps, save_figure

SOURCE = [*"25-12-2023", "<eos>"]
OUTPUT = [*"2023年12月25日", "<eos>"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=25)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    weights = rng.random((4, len(OUTPUT), len(SOURCE)))
    weights /= weights.sum(-1, keepdims=True)  # [H, Lt, Ls], rows sum to 1
    gold = [[row % len(SOURCE)] for row in range(len(OUTPUT))]
    figures = {
        "one heatmap": lambda: attention_heatmap(weights[0], SOURCE, OUTPUT, "25-12-2023 -> 2023年12月25日", gold),
        "four heads": lambda: head_heatmaps(weights, SOURCE, OUTPUT, "heads", gold),
    }
    with tempfile.TemporaryDirectory() as folder:
        png = Path(folder) / "figure.png"
        print(f"median CPU seconds per figure, {args.repeats} figures each")
        print(f"{'figure':<12} {'save_figure':>11} {'tight box':>10}")
        for name, draw in figures.items():
            medians = median_seconds(
                {
                    "save_figure": lambda draw=draw: save_figure(draw(), png),
                    "tight box": lambda draw=draw: draw().savefig(png, format="png", dpi=120, bbox_inches="tight"),
                },
                args.repeats,
                warmup=1,
                clock=time.process_time,
            )
            saved, tight = medians["save_figure"], medians["tight box"]
            print(f"{name:<12} {saved:>11.3f} {tight:>10.3f}  ({1 - saved / tight:.0%} less)")


if __name__ == "__main__":
    main()
