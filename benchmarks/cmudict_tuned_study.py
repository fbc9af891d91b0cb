"""The CMUdict study again, tuned: every arm tuned at an equal budget, then ranked with paired
significance between neighbours.

For each arm (a scorer, encoder and decoder) in turn:

1. ``attnlab tune`` over the space of ``benchmarks/cmudict_tuned_study.yaml`` with the same
   ``--trials`` and the same per-trial budget (:data:`TRIAL_BUDGET`: one epoch of the study's
   data, a third of a study run's steps) for every arm, its first trial the arm's untuned
   configuration (the space's ``baseline: true``); the study resumes when run again;
2. ``attnlab sweep`` of the arm at the study's budget (``benchmarks/cmudict_study.yaml``) with the
   tune's best values (``-o key=value``), seeds 0, 1 and 2, with ``--resume`` (finished runs are
   reused when run again).

Then the arms are ranked by test exact match (the seeds pooled) and each is tested against the
arm ranked above it (paired bootstrap over the test sources: :mod:`attnlab.evaluation.arm_significance`);
the table is printed as Markdown and written to ``--out``. Every step is resumable: after a cut,
run the same command again.

    export ATTNLAB_MLFLOW_DIR=$PWD/cmudict-tuned/mlflow
    python benchmarks/cmudict_tuned_study.py --trials 6 --out cmudict-tuned/table.md
    python benchmarks/cmudict_tuned_study.py --tiny            # reversal, 2 arms, 2 trials: minutes
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
#: The study's own runs: its config file and seeds.
STUDY_CONFIG, SEEDS = HERE / "cmudict_study.yaml", "0,1,2"
#: (scorer, encoder, decoder, extra flags) of every arm: the untuned study's configuration of the
#: arm (its dropout made explicit, each plugin's own: 0 recurrent, 0.1 transformer), the tune's
#: baseline trial and the base its values override.
ARMS = [(scorer, "bigru", "rnn", ["-o", "dropout=0.0"]) for scorer in ("none", "dot", "scaled_dot", "general", "additive", "multihead")]
ARMS.append(("multihead", "transformer", "transformer", ["-o", "learning_rate=0.001", "-o", "dropout=0.1"]))
#: Each trial's budget, the same for every arm: one epoch of the study's data instead of three
#: (its test split cut to 1,000 words and scored greedily: trials are chosen on validation).
TRIAL_BUDGET = ["--config", str(STUDY_CONFIG), "--epochs", "1", "-o", "test_size=1000", "-o", "beam_size=1"]
#: --tiny: reversal, two arms, a few seconds a run.
TINY_ARMS = [("dot", "gru", "rnn", ["-o", "dropout=0.0"]), ("additive", "gru", "rnn", ["-o", "dropout=0.0"])]
TINY_BUDGET = ["--task", "reverse", "--epochs", "2", "--train-size", "300", "--hidden-size", "16", "-o", "embedding_dim=8",
               "-o", "validation_size=40", "-o", "test_size=60", "-o", "task.max_length=10"]  # fmt: skip


def attnlab(*args: str) -> dict:
    """Run an attnlab command with --json (its progress on this stderr); its summary."""
    command = [str(Path(sys.executable).with_name("attnlab")), *args, "--json"]
    print("$ attnlab " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"attnlab {args[0]} ended with status {done.returncode}; run this script again to resume")
    return json.loads(done.stdout)


def tune_arm(arm, trials: int, budget: list[str], experiment: str) -> dict:
    scorer, encoder, decoder, extra = arm
    return attnlab("tune", "--space", str(HERE / "cmudict_tuned_study.yaml"), "--trials", str(trials), *budget, "--scorer", scorer,
                   "--encoder", encoder, "--decoder", decoder, *extra, "--experiment", experiment)  # fmt: skip


def train_arm(arm, best: dict, config: list[str], experiment: str) -> dict:
    scorer, encoder, decoder, extra = arm
    values = [f"-o{key}={json.dumps(value)}" for key, value in best["params"].items()]
    return attnlab("sweep", *config, "--scorer", scorer, "--encoder", encoder, "--decoder", decoder, *extra, *values,
                   "--seeds", SEEDS, "--experiment", experiment, "--resume")  # fmt: skip


def outcome_tables(run_ids: dict[int, str]) -> dict:
    """seed -> the outcome table of that seed's run (read from the store)."""
    from attnlab.flows.tracking.outcomes import run_outcomes
    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    use_store()
    client = MlflowClient()
    return {seed: run_outcomes(client, run_id) for seed, run_id in run_ids.items()}


def ranking(arms: dict[str, dict]) -> str:
    """The arms ranked by pooled exact match, each against the one above it, as Markdown."""
    from attnlab.evaluation.arm_significance import against_best, best_arm

    tables = {label: outcome_tables(runs) for label, runs in arms.items()}
    order, left = [], dict(tables)
    while left:
        top = best_arm(left)
        order.append(top)
        left.pop(top)
    lines = ["| arm | WER (%) | PER (%) | against the arm above: WER difference [95% interval], p |", "|---|---|---|---|"]
    for rank, label in enumerate(order):
        rows = [row for row in arms[label].values()]
        wer = 100 * sum(1 - t["correct"].mean() for t in tables[label].values()) / len(rows)
        per = 100 * sum(t["edits"].sum() / t["tokens"].sum() for t in tables[label].values()) / len(rows)
        cell = "-"
        if rank:
            marks = against_best({order[rank - 1]: tables[order[rank - 1]], label: tables[label]})
            (arm,) = [a for a in marks["arms"] if a["label"] == label and a["measures"]] or [None]
            if arm is not None:
                d = arm["measures"]["sequence_error_rate"]
                cell = f"{100 * d['difference']:+.2f} [{100 * d['low']:+.2f}, {100 * d['high']:+.2f}], p={d['p_value']:.3f}"
        lines.append(f"| {label} | {wer:.2f} | {per:.2f} | {cell} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=6, help="trials per arm (the same for every arm)")
    parser.add_argument("--tiny", action="store_true", help="reversal, 2 arms, 2 trials: checks the plumbing in minutes")
    parser.add_argument("--experiment", default="cmudict-tuned")
    parser.add_argument("--out", type=Path, help="also write the table here (Markdown)")
    args = parser.parse_args()
    arms, budget, config = (TINY_ARMS, TINY_BUDGET, TINY_BUDGET) if args.tiny else (ARMS, TRIAL_BUDGET, ["--config", str(STUDY_CONFIG)])
    trials = 2 if args.tiny else args.trials
    started, runs = time.monotonic(), {}
    for arm in arms:
        label = "/".join(arm[:3])
        tuned = tune_arm(arm, trials, budget, args.experiment + "-trials")
        if tuned["best"] is None:
            sys.exit(f"{label}: no trial completed; see the tune run {tuned['parent_run_id']}")
        swept = train_arm(arm, tuned["best"], config, args.experiment)
        runs[label] = {row["seed"]: row["run_id"] for row in swept["run_table"] if row["status"] == "FINISHED"}
        print(f"{label}: best trial {tuned['best']['trial']} {tuned['best']['params']}; {len(runs[label])} seeds trained", file=sys.stderr)
    table = ranking(runs)
    print(table)
    print(f"\nwall time {time.monotonic() - started:.0f} s (this invocation)", file=sys.stderr)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
