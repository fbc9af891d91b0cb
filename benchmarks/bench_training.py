"""Training speed of attnlab against the seed tutorial's own loop, in one run.

1. Throughput (samples/s) at the seed's model size (embedding 64, GRU hidden 128, scaled-dot
   attention): the reference at its batch size 32, attnlab at several batch sizes, eagerly and
   with ``compile_loops``. Every setup's first epoch (which compiles) is untimed; then the setups
   take turns, one epoch each per round.
2. Time to >= 99.9% exact match on unseen dates: the reference with the tutorial's settings,
   attnlab with its defaults. Only optimisation time counts; after every epoch both are scored
   (untimed) on the same 1,000 held-out real dates that neither saw in training.

Run: python benchmarks/bench_training.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

import seed_reference as ref
import torch
from train_until import train_until

from attnlab.data.splits import encode_examples
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model
from attnlab.plugins import Example, create_plugin
from attnlab.training.experiment import prepare_data
from attnlab.training.loop import train_step

TARGET = 0.999


def reference_epochs() -> Callable[[], float]:
    """A function that trains one epoch of the tutorial's loop (batch 32, 3000 dates) and
    returns its samples/s."""
    model, optimizer, criterion = ref.make_reference(seed=0)
    loader = ref.make_loader(3000, seed=0)

    def epoch() -> float:
        started = time.perf_counter()
        _, seen = ref.train_epoch(model, loader, optimizer, criterion)
        return seen / (time.perf_counter() - started)

    return epoch


def attnlab_epochs(batch_size: int, compile_loops: bool = False) -> Callable[[], float]:
    """The same for attnlab's optimisation steps at the seed's model size."""
    config = ExperimentConfig(batch_size=batch_size, train_size=3000, embedding_dim=64, hidden_size=128, compile_loops=compile_loops)
    task, splits = prepare_data(config)
    model = build_model(config, task)
    data = encode_examples(splits.train, model.src_vocab, model.tgt_vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    model.train()

    def epoch() -> float:
        started = time.perf_counter()
        for start in range(0, len(data), batch_size):
            train_step(model, data.rows(slice(start, start + batch_size)), optimizer, config)
        return len(data) / (time.perf_counter() - started)

    return epoch


def throughputs(setups: dict[str, Callable[[], float]], repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """(median samples/s of each setup, seconds of its untimed first epoch). The timed epochs
    take turns (one of each setup per round), so all setups see the same machine: its speed
    drifts by tens of percent over a minute."""
    first = {}
    for name, epoch in setups.items():
        started = time.perf_counter()
        epoch()
        first[name] = time.perf_counter() - started
    rates: dict[str, list[float]] = {name: [] for name in setups}
    for _ in range(repeats):
        for name, epoch in setups.items():
            rates[name].append(epoch())
    return {name: statistics.median(values) for name, values in rates.items()}, first


def unseen_test_dates(exclude: set[str], n: int = 1000) -> list[Example]:
    """``n`` distinct real dates in the tutorial's range whose source is not in ``exclude``."""
    task = create_plugin("tasks", "date", min_year=2000, max_year=2030)
    rng, picked = random.Random(12345), {}
    while len(picked) < n:
        ex = task.sample(rng)
        if ex.source not in exclude:
            picked[ex.source] = ex
    return list(picked.values())


def reference_time_to_target(max_epochs: int) -> tuple[float | None, int, float]:
    """(train seconds until unseen exact match >= TARGET or None, epochs run, last exact match)."""
    model, optimizer, criterion = ref.make_reference(seed=0)
    dataset = ref.DateDataset(3000, seed=0)
    loader = torch.utils.data.DataLoader(dataset, batch_size=ref.BATCH_SIZE, shuffle=True)
    seen = {src for src, _ in dataset.data}
    test = unseen_test_dates(seen)
    spent, score = 0.0, 0.0
    for epoch in range(1, max_epochs + 1):
        model.train()
        started = time.perf_counter()
        ref.train_epoch(model, loader, optimizer, criterion)
        spent += time.perf_counter() - started
        score = sum(ref.predict_one(model, ex.source) == ex.target for ex in test) / len(test)
        if score >= TARGET:
            return spent, epoch, score
    return None, max_epochs, score


def attnlab_time_to_target(max_epochs: int) -> tuple[float | None, int, float]:
    """The same measurement for attnlab's default configuration."""
    config = ExperimentConfig(epochs=max_epochs, target_exact_match=None)
    task, splits = prepare_data(config)
    model = build_model(config, task)
    result = train_until(model, splits, config, unseen_test_dates({ex.source for ex in splits.train}), TARGET)
    return (result["train"] if result["reached"] else None), result["epoch"], result["score"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (throughput) / runs (time to target)")
    parser.add_argument("--max-epochs", type=int, default=20)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads\n")

    print("Training throughput at the seed's model size (median samples/s)")
    setups = {"reference (tutorial loop, batch 32)": reference_epochs()}
    for batch, compile_loops in ((32, False), (128, False), (512, False), (1000, False), (1000, True)):
        setups[f"attnlab batch {batch:<4} {'compile_loops' if compile_loops else 'eager'}"] = attnlab_epochs(batch, compile_loops)
    rates, first = throughputs(setups, args.repeats)
    base = rates.pop("reference (tutorial loop, batch 32)")
    print(f"  {'reference (tutorial loop, batch 32)':<36} {base:8.0f}")
    for name, rate in rates.items():
        note = f"   (first epoch, untimed: {first[name]:.1f} s, compiling)" if "compile" in name else ""
        print(f"  {name:<36} {rate:8.0f}   {rate / base:4.1f}x{note}")

    print(f"\nTime to >= {TARGET:.1%} exact match on 1,000 unseen dates (median train seconds)")
    for name, measure in (("reference (tutorial settings)", reference_time_to_target), ("attnlab defaults", attnlab_time_to_target)):
        runs = [measure(args.max_epochs) for _ in range(args.repeats)]
        times = [spent for spent, _, _ in runs if spent is not None]
        detail = ", ".join(f"{'-' if s is None else f'{s:.1f}s'} @ epoch {e} ({score:.2%})" for s, e, score in runs)
        if len(times) == len(runs):
            print(f"  {name:<32} {statistics.median(times):6.1f} s   [{detail}]")
        else:
            print(f"  {name:<32} not reached in {args.max_epochs} epochs in {len(runs) - len(times)} run(s)   [{detail}]")


if __name__ == "__main__":
    main()
