"""What explaining a model's outputs costs: each gradient attribution method
(:func:`attnlab.evaluation.attribution.attribute`) on ``--examples`` date examples with the
default model, beside the erasure tests that every run already pays for; the median CPU seconds
of ``--repeats`` calls each, in turn (``bench_attention.median_seconds``), on one torch thread.
The model is untrained: the cost depends on its sizes and the lengths, not on its weights.

Run: python benchmarks/bench_attribution.py [--examples 100] [--steps 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import torch
from bench_attention import median_seconds

from attnlab.data.splits import encode_examples
from attnlab.evaluation.attribution import METHODS, attribute
from attnlab.evaluation.erasure import erasure_metrics
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model, build_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--steps", type=int, default=32, help="integrated gradients' points")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = ExperimentConfig()
    task = build_task(config)
    model = build_model(config, task)
    examples = task.generate(args.examples, seed=5)
    data = encode_examples(examples, model.src_vocab, model.tgt_vocab).trimmed()
    outputs = data.tgt[:, 1:]  # the gold tokens, EOS included, as the explanation measures take them
    calls = {
        method: lambda method=method: attribute(model, data.src, data.src_mask, outputs, method, steps=args.steps) for method in METHODS
    }
    calls["erasure tests"] = lambda: erasure_metrics(model, examples, size=args.examples)
    medians = median_seconds(calls, args.repeats, warmup=1, clock=time.process_time)
    print(f"{config.encoder}/{config.decoder}/{config.scorer}, hidden {config.hidden_size}: {args.examples} examples "
          f"({data.src.shape[1]} source, {outputs.shape[1]} target tokens), integrated gradients at {args.steps} steps")  # fmt: skip
    print(f"{'method':<22} {'CPU s':>7}")
    for name, seconds in medians.items():
        print(f"{name:<22} {seconds:>7.2f}")


if __name__ == "__main__":
    main()
