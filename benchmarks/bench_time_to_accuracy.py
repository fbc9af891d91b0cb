"""Time to a target test exact match on the date task, setting against setting, in one run.

Throughput (samples/s, ``bench_training.py``) says how fast a setting chews examples; what a user
waits for is the accuracy. Each setting trains from scratch (seeds 0, 1, 2, the settings taking
turns so all see the same machine) until the exact match on the config's 1,000 test dates
reaches the target; scoring the test split after each epoch is untimed. Two clocks:

- ``train s``: optimisation steps only (the first epoch of ``compile_loops`` includes compiling);
- ``wall s``: whole epochs as ``attnlab train`` runs them, validation pass included.

Run: python benchmarks/bench_time_to_accuracy.py [--target 0.999] [--seeds 0,1,2] [--max-epochs 30]
[--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from train_until import train_until

from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model
from attnlab.training.experiment import prepare_data

#: name -> config overrides of the defaults (what ``-o KEY=VALUE`` / flags would set).
SETTINGS: dict[str, dict] = {
    "defaults (batch 64)": {},
    "--batch-size 128": {"batch_size": 128},
    "--batch-size 1000": {"batch_size": 1000},
    "-o compile_loops=true --batch-size 1000": {"compile_loops": True, "batch_size": 1000},
}


def time_to_target(overrides: dict, seed: int, target: float, max_epochs: int) -> dict:
    """Train one setting until the test exact match reaches ``target``; the clocks and epochs."""
    config = ExperimentConfig(seed=seed, epochs=max_epochs, target_exact_match=None, **overrides)
    task, splits = prepare_data(config)
    torch.manual_seed(seed)
    model = build_model(config, task)
    return train_until(model, splits, config, splits.test, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.999, help="test exact match to reach")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; target test exact match {args.target:.1%}\n")
    runs: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for seed in seeds:
        for name, overrides in SETTINGS.items():
            result = time_to_target(overrides, seed, args.target, args.max_epochs)
            runs[name].append(result)
            print(
                f"  seed {seed}  {name:<42} {result['wall']:6.1f} s wall, {result['train']:6.1f} s train, "
                f"epoch {result['epoch']}, test exact match {result['score']:.2%}",
                flush=True,
            )
    header = f"{'setting':<42} {'epochs':>7} {'train s':>8} {'wall s':>8}   per seed (wall s @ epoch)"
    print()
    print(header)
    print("-" * len(header))
    for name, results in runs.items():
        detail = ", ".join(f"{r['wall']:.1f}@{r['epoch']}{'' if r['reached'] else ' NOT REACHED'}" for r in results)
        epoch, train, wall = (statistics.median(r[key] for r in results) for key in ("epoch", "train", "wall"))
        print(f"{name:<42} {epoch:>7.0f} {train:>8.1f} {wall:>8.1f}   {detail}")
    print(f"\nmedians over seeds {args.seeds}; finished {time.strftime('%Y-%m-%d %H:%M:%S')}")


if __name__ == "__main__":
    main()
