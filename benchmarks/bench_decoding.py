"""Batched greedy decoding against the seed tutorial's one-date-at-a-time inference, in one run.

Both models are trained for one epoch first (decoding speed depends on when EOS comes), then
decode the same 5,000 unseen dates (attnlab in batches); the reference decodes a 500-date subset,
one at a time. attnlab decodes eagerly and with its GRU step compiled (``compile_loops``; the
compilation happens once, untimed, and is reported). Each repeat times all three; attnlab's timed
passes follow an untimed one, as in a service that keeps decoding.

Run: python benchmarks/bench_decoding.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import seed_reference as ref
import torch
from bench_training import unseen_test_dates

from attnlab.data.splits import encode_examples
from attnlab.lab.config import ExperimentConfig
from attnlab.model.decode import greedy_decode
from attnlab.plugins._recurrence import compiled
from attnlab.training.experiment import prepare_data, train_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=1000, help="dates per decoding batch")
    args = parser.parse_args()

    model, optimizer, criterion = ref.make_reference(seed=0)
    ref.train_epoch(model, ref.make_loader(3000, seed=0), optimizer, criterion)
    config = ExperimentConfig(epochs=1)
    task, splits = prepare_data(config)
    ours, _ = train_model(config, task, splits)
    ours.eval()

    test = unseen_test_dates({ex.source for ex in splits.train}, n=5000)
    data = encode_examples(test, ours.src_vocab, ours.tgt_vocab)
    subset = test[:500]

    def decode_all():
        return torch.cat(
            [
                greedy_decode(ours, data.src[i : i + args.batch_size], data.src_mask[i : i + args.batch_size], max_length=16).tokens
                for i in range(0, len(data), args.batch_size)
            ]
        )

    def timed(mode: str) -> float:
        """dates/s of one pass, after an untimed one: following the reference's run, the first
        pass pays for its buffers again."""
        with compiled(mode == "compiled"):
            decode_all()
            started = time.perf_counter()
            tokens = decode_all()
        rate = len(test) / (time.perf_counter() - started)
        outputs = [ours.tgt_vocab.decode(row) for row in tokens.tolist()]
        accuracy[mode] = sum(o == ex.target for o, ex in zip(outputs, test)) / len(test)
        return rate

    accuracy: dict[str, float] = {}
    started = time.perf_counter()
    with compiled():
        decode_all()
    compile_seconds = time.perf_counter() - started
    per_sample, batched = [], {"eager": [], "compiled": []}
    for _ in range(args.repeats):
        started = time.perf_counter()
        for ex in subset:
            ref.predict_one(model, ex.source)
        per_sample.append(len(subset) / (time.perf_counter() - started))
        for mode, rates in batched.items():
            rates.append(timed(mode))

    base = statistics.median(per_sample)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.repeats}")
    print(f"  {'reference, one date at a time':<36} {base:9.0f} dates/s")
    for mode, rates in batched.items():
        rate = statistics.median(rates)
        label = f"attnlab {mode}, batches of {args.batch_size}"
        print(
            f"  {label:<36} {rate:9.0f} dates/s   {rate / base:5.0f}x"
            f"   (exact match {accuracy[mode]:.2%}; each repeat: {', '.join(f'{r:.0f}' for r in rates)})"
        )
    print(f"  (compiling the decoding step once, untimed: {compile_seconds:.1f} s)")


if __name__ == "__main__":
    main()
