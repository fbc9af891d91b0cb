"""Error rates of a training checkpoint, or of the mean of several: how good a run was after its first N minutes.

A run writes a checkpoint after every epoch (``~/.cache/attnlab/checkpoints/<run id>/checkpoint.pt``,
replaced each time); copy the ones you want while it trains, e.g.

    while sleep 20; do cp -n "$CKPT" "copies/$(stat -c %Y "$CKPT").pt"; done

then score a copy on the run's full test split (the config comes from the checkpoint):

Run: python benchmarks/checkpoint_wer.py COPY.pt [--beam-size 5]

Given several copies (the epochs of one run, oldest first), it scores the elementwise mean of
their weights: what ``checkpoint: last`` with ``average_last: N`` would have kept had the run
been trained with it (averaging does not change training). ``--split validation`` scores on the
run's validation split, to choose N there before the test split is looked at.

Run: python benchmarks/checkpoint_wer.py EPOCH24.pt ... EPOCH28.pt --split validation
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
from attnlab.training.selection import average_weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, nargs="+", help="one copy, or several of one run to average (oldest first)")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--split", choices=["test", "validation"], default="test")
    args = parser.parse_args()
    states = [load_weights(path) for path in args.checkpoint]
    state = states[-1]
    config = ExperimentConfig.model_validate(state["config"])
    task, splits = prepare_data(config)
    model = build_model(config, task, probe=False)
    model.load_state_dict(average_weights([each["model"] for each in states]))
    model.eval()
    examples = splits.test if args.split == "test" else splits.validation
    started = time.perf_counter()
    metrics = evaluate(model, examples, beam_size=args.beam_size).metrics
    epochs = [len(each["history"]) for each in states]
    scored = f"the mean of epochs {', '.join(map(str, epochs))}" if len(states) > 1 else args.checkpoint[0].name
    print(
        f"{scored}: after {epochs[-1]} of {config.epochs} epochs, {state['train_seconds'] / 60:.1f} min of training "
        f"({sum(h['seconds'] for h in state['history']) / 60:.1f} min of whole epochs)"
    )
    shown = [(f"beam {args.beam_size}", ""), ("greedy", "greedy_")] if args.beam_size > 1 else [("greedy", "")]
    for name, prefix in shown:
        per, wer = metrics[f"{prefix}token_error_rate"], metrics[f"{prefix}sequence_error_rate"]
        print(
            f"  {name}: PER {per:.2%}  WER {wer:.2%}  exact match {metrics[f'{prefix}exact_match']:.4f}  "
            f"on {len({ex.source for ex in examples}):,} {args.split} words"
        )
    print(f"  (scored in {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
