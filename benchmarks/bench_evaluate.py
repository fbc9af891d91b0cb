"""The evaluation's cost on the default run's model: every metric, and the erasure tests alone.

Trains the default config (date task, gru/rnn/scaled_dot, 3000 examples, test 1000) for one
epoch at ``--seed``, then times :func:`attnlab.evaluation.metrics.evaluate` (decoding, the alignment
measures and the erasure tests together) and :func:`attnlab.evaluation.erasure.erasure_metrics` alone (its
default sample of test examples), each the median of ``--repeats`` calls, with one torch thread.

Run: python benchmarks/bench_evaluate.py [--repeats 3] [--scorer scaled_dot] [--decoder rnn]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from attnlab.evaluation.erasure import SAMPLE_SIZE, erasure_metrics
from attnlab.evaluation.metrics import evaluate
from attnlab.lab.config import ExperimentConfig
from attnlab.training.experiment import prepare_data, train_model


def median_seconds(fn, repeats: int) -> float:
    """Median wall seconds of ``fn()`` over ``repeats`` calls."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--scorer", default="scaled_dot")
    parser.add_argument("--decoder", default="rnn")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = ExperimentConfig(scorer=args.scorer, decoder=args.decoder, epochs=1, seed=args.seed, device="cpu")
    task, splits = prepare_data(config)
    model, _ = train_model(config, task, splits)
    test = splits.test
    whole = median_seconds(lambda: evaluate(model, test), args.repeats)
    erasure = median_seconds(lambda: erasure_metrics(model, test), args.repeats)
    print(f"scorer {args.scorer}, decoder {args.decoder}, {len(test)} test examples, erasure sample {min(SAMPLE_SIZE, len(test))}")
    print(f"evaluate (all metrics): {whole:.2f} s")
    print(f"erasure tests alone:    {erasure:.2f} s ({erasure / whole:.0%} of evaluate)")
    for name, value in evaluate(model, test).metrics.items():
        print(f"  {name} {value:.4f}")


if __name__ == "__main__":
    main()
