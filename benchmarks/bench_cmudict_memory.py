"""Peak resident memory of a whole `attnlab train` on cmudict, and which phase of the run peaks.

Runs the CMUdict study's config (``cmudict_study.yaml``: 100,000 training words, 1,000
validation, 12,000 test words, beam 5, batches of 64 pooled by length) with the longer run's
model (bigru encoder, rnn decoder, additive attention, embedding 128, hidden 256), for
``--epochs`` epochs, in a fresh store and data cache: every phase a real run has (imports, the
split, training with validation, evaluation with beam 5 and the erasure tests, plots, the
explorer, logging, registration, promotion). Memory is sampled every 0.1 s as
``bench_pairs_scale.py`` does (the process, and its tree with the Prefect server it starts); the
phases are placed on that timeline by the run's own timings (``--json``) and its stderr lines.
Prints the peak of the process and of the tree, then each phase's peak and its memory at the
phase's end, and the run's test metrics (to check that a change keeps the results).

    python bench_cmudict_memory.py                                  # this checkout's attnlab
    python bench_cmudict_memory.py --attnlab OTHER/.venv/bin/attnlab  # another checkout's
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from bench_pairs_scale import Sampled, run_sampled

HERE = Path(__file__).resolve().parent
#: The lines of a run printed on stderr that end a phase (the last epoch's line ends training).
EPOCH_LINE = "train_loss"


def phases(run: Sampled, summary: dict) -> list[tuple[str, float, float]]:
    """(name, start, end) in seconds since the process started: everything before the flow's
    first line as "start-up" (imports, config and store check, Prefect's server), then the flow's
    steps in order, training ended by the last epoch's line and the steps after it laid out from
    there by their own durations."""
    starts = [when for when, line, _ in run.lines if line.startswith("training ")]
    flow_start = starts[0] if starts else 0.0
    epoch_lines = [when for when, line, _ in run.lines if EPOCH_LINE in line and "val_loss" in line]
    out, clock = [("start-up", 0.0, flow_start)], flow_start
    for name, seconds in summary["timings"]["steps"].items():
        end = epoch_lines[-1] if name == "train" and epoch_lines else clock + seconds
        out.append((name, clock, end))
        clock = end
    out.append(("closing", clock, run.seconds))
    return out


def gib(value: int) -> str:
    return f"{value / 2**30:.2f} GiB"


def both(value: int) -> str:
    """``1.33 GiB (1.43 GB)``: the target is in GB (10^9 bytes)."""
    return f"{gib(value)} ({value / 1e9:.2f} GB)"


def report(run: Sampled, summary: dict) -> None:
    """The peaks, the phases' table and the test metrics."""
    print(f"exit {run.returncode}; {run.seconds:.1f} s wall, {summary.get('train_seconds', 0):.1f} s training")
    print(f"peak resident memory: attnlab train {both(run.peak)}, with its Prefect server {both(run.tree_peak)}")
    print(f"{'phase':<10} {'from s':>8} {'to s':>8} {'peak':>10} {'at end':>10} {'tree peak':>10}")
    for name, start, end in phases(run, summary):
        inside = [(rss, tree) for when, rss, tree in run.samples if start <= when <= end and rss]
        if not inside:
            continue
        peak, tree = max(rss for rss, _ in inside), max(tree for _, tree in inside)
        print(f"{name:<10} {start:8.1f} {end:8.1f} {gib(peak):>10} {gib(inside[-1][0]):>10} {gib(tree):>10}")
    metrics = summary.get("metrics", {})
    history = summary.get("history", [{}])[-1]
    print(f"train_loss {history.get('train_loss')}  val_loss {history.get('val_loss')}")
    print("test: " + "  ".join(f"{key} {metrics[key]:.4f}" for key in sorted(metrics) if isinstance(metrics[key], float)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attnlab", type=Path, default=Path(sys.executable).with_name("attnlab"), help="the attnlab executable to run")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--samples", type=Path, help="also write the memory samples and stderr lines to this JSON file")
    parser.add_argument("-o", "--option", action="append", default=[], help="KEY=VALUE passed on to attnlab train")
    args = parser.parse_args()
    command = [str(args.attnlab), "train", "--config", str(HERE / "cmudict_study.yaml"), "--scorer", "additive", "--encoder", "bigru",
               "--hidden-size", str(args.hidden_size), "--embedding-dim", "128", "--epochs", str(args.epochs), "--json",
               *(f"-o{option}" for option in args.option)]  # fmt: skip
    print(" ".join(command[1:]))
    with tempfile.TemporaryDirectory() as store:
        env = {**os.environ, "ATTNLAB_MLFLOW_DIR": store, "ATTNLAB_CACHE_DIR": f"{store}/cache"}
        env.pop("MLFLOW_TRACKING_URI", None)
        run = run_sampled(command, env)
    if run.returncode != 0:
        print("\n".join(line for _, line, _ in run.lines[-10:]))
        raise SystemExit(f"attnlab train exited {run.returncode}")
    summary = json.loads(run.stdout)
    report(run, summary)
    if args.samples:
        args.samples.write_text(json.dumps({"samples": run.samples, "lines": run.lines, "phases": phases(run, summary)}))


if __name__ == "__main__":
    main()
