"""Test error rates of a training checkpoint: how good a run was after its first N minutes.

A run writes a checkpoint after every epoch (``~/.cache/attnlab/checkpoints/<run id>/checkpoint.pt``,
replaced each time); copy the ones you want while it trains, e.g.

    while sleep 20; do cp -n "$CKPT" "copies/$(stat -c %Y "$CKPT").pt"; done

then score a copy on the run's full test split (the config comes from the checkpoint):

Run: python benchmarks/checkpoint_wer.py COPY.pt [--beam-size 5]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from attnlab.evaluation.metrics import evaluate
from attnlab.lab.config import ExperimentConfig
from attnlab.model.assembly import build_model
from attnlab.model.bundle import load_weights
from attnlab.training.experiment import prepare_data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--beam-size", type=int, default=5)
    args = parser.parse_args()
    state = load_weights(args.checkpoint)
    config = ExperimentConfig.model_validate(state["config"])
    task, splits = prepare_data(config)
    model = build_model(config, task, probe=False)
    model.load_state_dict(state["model"])
    model.eval()
    started = time.perf_counter()
    metrics = evaluate(model, splits.test, beam_size=args.beam_size).metrics
    epochs = len(state["history"])
    print(
        f"{args.checkpoint}: after {epochs} of {config.epochs} epochs, {state['train_seconds'] / 60:.1f} min of training "
        f"({sum(h['seconds'] for h in state['history']) / 60:.1f} min of whole epochs)"
    )
    shown = [(f"beam {args.beam_size}", ""), ("greedy", "greedy_")] if args.beam_size > 1 else [("greedy", "")]
    for name, prefix in shown:
        per, wer = metrics[f"{prefix}token_error_rate"], metrics[f"{prefix}sequence_error_rate"]
        print(f"  {name}: PER {per:.2%}  WER {wer:.2%}  on {len({ex.source for ex in splits.test}):,} test words")
    print(f"  (scored in {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
