"""Training cost on real data (cmudict, 100,000 training words) beside the date task, in one run.

For each task at the default model (GRU encoder, RNN decoder, scaled-dot attention, embedding
64, hidden 128, batch 64):

1. Data: the seconds to read and split the task's examples and to encode them into tensors (done
   once per run; the lab caches the splits as a file keyed by the data's digest).
2. Throughput: rounds of ``--steps`` optimisation steps per task, the tasks taking turns (after
   one untimed warm-up round), with the trainer's batches (shuffled, trimmed to the longest row
   of each batch; ``--bucketing`` pools them by source length as ``length_bucketing`` does).
   Reported as medians over rounds: samples/s and target tokens/s (phonemes or characters, EOS
   included: what the decoder steps through).
3. Peak resident memory of the process (ru_maxrss), after everything.

Run: python benchmarks/bench_g2p.py [--rounds 5] [--steps 100] [--bucketing 1]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import torch

from attnlab.data.splits import EncodedExamples, encode_examples, make_splits
from attnlab.data.vocab import PAD
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task
from attnlab.training.loop import length_bucketed_batches, train_step

SIZES = {"date": (3000, 500, 1000), "cmudict": (100_000, 2000, 12_000)}


def prepared(task_name: str, bucketing: int) -> tuple[float, float, object, EncodedExamples, ExperimentConfig]:
    """(seconds to split, seconds to encode, the model, the encoded training split, its config)."""
    train, validation, test = SIZES[task_name]
    config = ExperimentConfig(task=task_name, train_size=train, validation_size=validation, test_size=test, length_bucketing=bucketing)
    started = time.perf_counter()
    task = build_task(config)
    splits = make_splits(task, (train, validation, test), config.seed)
    split_seconds = time.perf_counter() - started
    model = build_model(config, task)
    started = time.perf_counter()
    data = encode_examples(splits.train, model.src_vocab, model.tgt_vocab)
    return split_seconds, time.perf_counter() - started, model, data, config


def one_round(model, data: EncodedExamples, config: ExperimentConfig, optimizer, steps: int, generator) -> tuple[float, float]:
    """samples/s and target tokens/s of ``steps`` optimisation steps."""
    batches = length_bucketed_batches(data.source_lengths, config.batch_size, generator, config.length_bucketing)[:steps]
    rows = tokens = 0
    started = time.perf_counter()
    for index in batches:
        batch = data.rows(index).trimmed()
        train_step(model, batch, optimizer, config)
        rows += len(batch)
        tokens += int((batch.tgt[:, 1:] != PAD).sum())
    seconds = time.perf_counter() - started
    return rows / seconds, tokens / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--bucketing", type=int, default=1, help="length_bucketing (1: plain shuffled batches)")
    args = parser.parse_args()
    torch.manual_seed(0)
    setups = {}
    for name in SIZES:
        split_s, encode_s, model, data, config = prepared(name, args.bucketing)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
        model.train()
        mean_target = float((data.tgt[:, 1:] != PAD).sum()) / len(data)
        print(f"{name}: {len(data):,} training examples; split {split_s:.1f} s, encoded {encode_s:.1f} s; "
              f"{mean_target:.1f} target tokens per example (EOS included)", flush=True)  # fmt: skip
        setups[name] = (model, data, config, optimizer, torch.Generator().manual_seed(0), [])
    for round_ in range(args.rounds + 1):  # round 0 warms up, untimed
        for model, data, config, optimizer, generator, results in setups.values():
            measured = one_round(model, data, config, optimizer, args.steps, generator)
            if round_:
                results.append(measured)
    print(f"\nthroughput, median of {args.rounds} rounds of {args.steps} steps (batch 64, length_bucketing {args.bucketing}):")
    for name, (*_, results) in setups.items():
        samples, tokens = statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)
        print(f"  {name:8s} {samples:8,.0f} samples/s  {tokens:9,.0f} target tokens/s  "
              f"(rounds: {', '.join(f'{r[1]:,.0f}' for r in results)} tokens/s)")  # fmt: skip
    print(f"\npeak resident memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
