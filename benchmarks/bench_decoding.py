"""Batched greedy decoding against the seed tutorial's one-date-at-a-time inference, in one run.

Both models are trained for one epoch first (decoding speed depends on when EOS comes), then
decode the same 5,000 unseen dates (attnlab in batches); the reference decodes a 500-date subset,
one at a time. Each repeat times both; attnlab's timed pass follows an untimed one, as in a
service that keeps decoding.

Run: python benchmarks/bench_decoding.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import seed_reference as ref
from bench_training import unseen_test_dates
from attnlab.config import ExperimentConfig
from attnlab.data import encode_examples
from attnlab.decode import greedy_decode
from attnlab.experiment import prepare_data, train_model


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
        return torch.cat([greedy_decode(ours, data.src[i : i + args.batch_size], data.src_mask[i : i + args.batch_size], max_length=16).tokens for i in range(0, len(data), args.batch_size)])

    per_sample, batched = [], []
    for _ in range(args.repeats):
        started = time.perf_counter()
        for ex in subset:
            ref.predict_one(model, ex.source)
        per_sample.append(len(subset) / (time.perf_counter() - started))
        decode_all()  # untimed: after the reference's run the first pass pays for its buffers again
        started = time.perf_counter()
        tokens = decode_all()
        batched.append(len(test) / (time.perf_counter() - started))

    outputs = [ours.tgt_vocab.decode(row) for row in tokens.tolist()]
    accuracy = sum(o == ex.target for o, ex in zip(outputs, test)) / len(test)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.repeats}")
    print(f"  reference, one date at a time     {statistics.median(per_sample):9.0f} dates/s")
    print(f"  attnlab, batches of {args.batch_size:<5}         {statistics.median(batched):9.0f} dates/s"
          f"   {statistics.median(batched) / statistics.median(per_sample):5.0f}x   (exact match {accuracy:.2%})")
    print(f"  attnlab, each repeat: {', '.join(f'{rate:.0f}' for rate in batched)} dates/s")


if __name__ == "__main__":
    main()
