"""Is attention an explanation? Attention beside saliency, input x gradient and integrated
gradients, scored against the gold alignment and by erasure, for every scorer.

Every run of attnlab measures its explanations (``explain``, on by default: see "Is attention an
explanation?" in docs/measures.md). This study runs, for each task, ``attnlab sweep`` of every
arm (each scorer on a bidirectional GRU encoder and a GRU decoder, and the transformer pair with
multi-head attention) over seeds 0, 1 and 2, with ``--resume`` (finished runs are reused when it
runs again), then reads every run's ``test_explain_*`` metrics from the store and prints, per
task, the mean and standard deviation over the seeds of each measure per arm and method, and
which method is the most aligned and the most faithful in each arm:

- ``date``: the gold alignment is known: alignment and faithfulness;
- ``cmudict``: no gold: faithfulness and the agreement with attention only.

Every step is resumable: after a cut, run the same command again.

    export ATTNLAB_MLFLOW_DIR=$PWD/explanation-study/mlflow
    python benchmarks/explanation_study.py --out explanation-study/tables.md   # the study (about an hour on 2 cores)
    python benchmarks/explanation_study.py --tiny                              # the plumbing: minutes
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
#: (label, sweep flags) of every arm: the scorers on bigru + rnn, and the transformer pair at the
#: learning rate of the CMUdict study's (docs/cmudict-study.md).
ARMS = [("bigru+rnn", ["--scorer", "none,dot,scaled_dot,general,additive,multihead", "--encoder", "bigru", "--decoder", "rnn"]),
        ("transformer", ["--scorer", "multihead", "--encoder", "transformer", "--decoder", "transformer", "-o", "learning_rate=0.001"])]  # fmt: skip
#: Each task's budget: date at its default sizes (early stop at 0.999 validation exact match);
#: cmudict with the CMUdict study's config on 30,000 words and 2,000 test words, greedy decoding.
BUDGETS = {
    "date": ["--task", "date", "--epochs", "10"],
    "cmudict": ["--config", str(HERE / "cmudict_study.yaml"), "--train-size", "30000", "-o", "test_size=2000", "-o", "beam_size=1"],
}
SEEDS = "0,1,2"
#: --tiny: the same arms (two scorers), tiny models and data, a few seconds a run.
TINY_ARMS = [("bigru+rnn", ["--scorer", "none,additive", "--encoder", "bigru", "--decoder", "rnn"]), ARMS[1]]
TINY = ["--epochs", "1", "--train-size", "300", "--hidden-size", "16", "-o", "embedding_dim=8", "-o", "validation_size=40",
        "-o", "test_size=40", "-o", "explain_examples=8", "-o", "explain_steps=4", "-o", "target_exact_match=null"]  # fmt: skip
TINY_BUDGETS = {"date": ["--task", "date", *TINY], "cmudict": ["--config", str(HERE / "cmudict_study.yaml"), *TINY, "-o", "beam_size=1"]}
TINY_SEEDS = "0,1"

METHODS = ("attention", "saliency", "input_x_gradient", "integrated_gradients", "random")
#: Measures shown per task: (metric suffix, heading, higher is better).
ALIGNMENT = [("alignment_within_one", "within one", True), ("alignment_shifted_accuracy", "shifted", True),
             ("alignment_error_rate", "AER", False)]  # fmt: skip
FAITHFULNESS = [("comprehensiveness", "compr.", True), ("sufficiency", "suff.", False), ("flip_top", "flip top-1", True),
                ("kendall_tau", "tau vs attention", True)]  # fmt: skip


def attnlab(*args: str) -> dict:
    """Run an attnlab command with --json (its progress on this stderr); its summary."""
    command = [str(Path(sys.executable).with_name("attnlab")), *args, "--json"]
    print("$ attnlab " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"attnlab {args[0]} ended with status {done.returncode}; run this script again to resume")
    return json.loads(done.stdout)


def sweep_task(task: str, budget: list[str], arms: list, seeds: str, experiment: str) -> dict[str, dict[int, str]]:
    """Sweep every arm on ``task``; arm label -> seed -> the id of its finished run."""
    runs: dict[str, dict[int, str]] = {}
    for name, flags in arms:
        swept = attnlab("sweep", *budget, *flags, "--seeds", seeds, "--experiment", f"{experiment}-{task}", "--resume")
        for row in swept["run_table"]:
            if row["status"] == "FINISHED":
                label = row["label"] if name != "transformer" else "multihead, transformer pair"
                runs.setdefault(label, {})[int(row["seed"])] = row["run_id"]
    return runs


def run_metrics(runs: dict[str, dict[int, str]]) -> dict[str, list[dict[str, float]]]:
    """Arm label -> the metrics of its runs (read from the store)."""
    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    use_store()
    client = MlflowClient()
    return {label: [client.get_run(run_id).data.metrics for run_id in seeds.values()] for label, seeds in runs.items()}


def cell(values: list[float]) -> str:
    """Mean +- standard deviation of the finite ``values`` ("n/a" without any)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return "n/a"
    spread = f" ± {statistics.stdev(finite):.3f}" if len(finite) > 1 else ""
    return f"{statistics.mean(finite):.3f}{spread}"


def best_method(metrics: list[dict[str, float]], measure: str, higher: bool) -> str:
    """The method (random left out) with the best mean ``measure`` over ``metrics``; "-" without one."""
    means = {}
    for method in METHODS[:-1]:
        values = [m[f"test_explain_{method}_{measure}"] for m in metrics if f"test_explain_{method}_{measure}" in m]
        if values:
            means[method] = statistics.mean(values)
    if not means:
        return "-"
    return (max if higher else min)(means, key=lambda method: means[method])


def task_table(task: str, arms: dict[str, list[dict[str, float]]]) -> str:
    """One task's Markdown table: a row per arm and method, the mean ± std over the seeds; then
    which method is the most aligned and the most faithful per arm."""
    measures = (ALIGNMENT if task == "date" else []) + FAITHFULNESS
    lines = [f"### {task}", "", "| arm | method | " + " | ".join(h for _, h, _ in measures) + " |", "|---|---|" + "---|" * len(measures)]
    for label, metrics in arms.items():
        for method in METHODS:
            values = [[m.get(f"test_explain_{method}_{name}", math.nan) for m in metrics] for name, _, _ in measures]
            if all(cell(v) == "n/a" for v in values):
                continue  # attention of the none scorer
            lines.append(f"| {label} ({len(metrics)} seeds) | {method} | " + " | ".join(cell(v) for v in values) + " |")
    lines += ["", "| arm | most aligned (within one) | most faithful (comprehensiveness) | lowest sufficiency |", "|---|---|---|---|"]
    for label, metrics in arms.items():
        aligned = best_method(metrics, "alignment_within_one", True) if task == "date" else "-"
        faithful, sufficient = best_method(metrics, "comprehensiveness", True), best_method(metrics, "sufficiency", False)
        lines.append(f"| {label} | {aligned} | {faithful} | {sufficient} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny models and data, two scorers and the transformer pair, 2 seeds: minutes")
    parser.add_argument("--experiment", default="explanation-study")
    parser.add_argument("--out", type=Path, help="also write the tables here (Markdown)")
    args = parser.parse_args()
    budgets, arms, seeds = (TINY_BUDGETS, TINY_ARMS, TINY_SEEDS) if args.tiny else (BUDGETS, ARMS, SEEDS)
    started, tables = time.monotonic(), []
    for task, budget in budgets.items():
        runs = sweep_task(task, budget, arms, seeds, args.experiment)
        tables.append(task_table(task, run_metrics(runs)))
    text = "\n\n".join(tables)
    print(text)
    print(f"\nwall time {time.monotonic() - started:.0f} s (this invocation)", file=sys.stderr)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
