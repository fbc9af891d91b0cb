"""What writing a run's attention heatmaps costs: one example's heatmap and a four-head grid of
a date example (11 source tokens, 12 output tokens, gold outlined), drawn and saved as
:func:`attnlab.viz.heatmaps.save_figure` saves them (the constrained layout alone) beside the
same figures saved with a tight bounding box, which draws each figure twice; the median CPU
seconds of ``--repeats`` figures each, side by side in one run.

Run: python benchmarks/bench_plots.py [--repeats 9]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from attnlab.viz.heatmaps import attention_heatmap, head_heatmaps, save_figure

SOURCE = [*"25-12-2023", "<eos>"]
OUTPUT = [*"2023年12月25日", "<eos>"]


def median_cpu_seconds(draw_and_save, repeats: int) -> float:
    """Median process CPU seconds of ``draw_and_save()`` over ``repeats`` calls (after one warm-up)."""
    draw_and_save()
    times = []
    for _ in range(repeats):
        started = time.process_time()
        draw_and_save()
        times.append(time.process_time() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
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
            saved = median_cpu_seconds(lambda draw=draw: save_figure(draw(), png), args.repeats)
            tight = median_cpu_seconds(lambda draw=draw: draw().savefig(png, format="png", dpi=120, bbox_inches="tight"), args.repeats)
            print(f"{name:<12} {saved:>11.3f} {tight:>10.3f}  ({1 - saved / tight:.0%} less)")


if __name__ == "__main__":
    main()
