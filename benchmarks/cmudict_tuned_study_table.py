"""The tuned CMUdict study's tables, from the stores: each arm untuned beside tuned, each arm's
trials, then the tuned arms ranked with paired significance between neighbours.

The first table puts, per arm, the untuned study's WER and PER (beam 5, mean +- std over seeds
0-2, from its store: ``benchmarks/cmudict_study/store.tar.xz`` unpacked) beside the tuned runs'
(experiment ``cmudict-tuned`` of the tuned study's store), with the tuned values the arm trained
with and its training minutes per run. The second gives each arm's trials: the validation exact
match of each (trial 0 the baseline, the untuned configuration). The third is the tuned study's ranking
(:func:`cmudict_tuned_study.ranking`: each arm against the one above it, paired bootstrap over the
test words, the seeds pooled). The untuned runs were logged before runs kept their per-word
outcomes, so untuned and tuned are compared by their means and seed spread, not paired.

Run:
    tar -xJf benchmarks/cmudict_study/store.tar.xz -C /tmp/untuned     # /tmp/untuned/mlflow
    ATTNLAB_MLFLOW_DIR=cmudict-tuned/mlflow python benchmarks/cmudict_tuned_study_table.py --untuned /tmp/untuned/mlflow
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # the study's own scripts beside this one

from cmudict_study_table import combination, experiment_id, study_runs  # noqa: E402
from cmudict_tuned_study import ranking  # noqa: E402

from attnlab.flows.tracking.store import use_store  # noqa: E402
from mlflow import MlflowClient  # noqa: E402

#: The values the tuned study searched (benchmarks/cmudict_tuned_study.yaml), as the runs log them.
TUNED = ("learning_rate", "warmup_steps", "lr_schedule", "dropout", "label_smoothing")


def _cell(group: pd.DataFrame, column: str) -> str:
    return f"{group[column].mean():.2f} ± {group[column].std(ddof=0):.2f}"


def _values(params: dict[str, str]) -> str:
    shown = []
    for name in TUNED:
        value = params.get(name, "")
        try:
            number = float(value)
        except ValueError:
            shown.append(f"{name} {value}")
            continue
        shown.append(f"{name} {number:.3g}" if name != "warmup_steps" else f"{name} {int(number)}")
    return ", ".join(shown)


def beside(untuned: pd.DataFrame, tuned: pd.DataFrame) -> str:
    """One row per arm, best tuned WER first: untuned and tuned WER and PER, the WER change, the
    tuned values and minutes of training per run."""
    lines = [
        "| arm | WER untuned | WER tuned | change | PER untuned | PER tuned | tuned values | train min |",
        "|---|---|---|---|---|---|---|---|",
    ]
    grouped = tuned.groupby("combination")
    for arm in grouped["WER beam 5"].mean().sort_values().index:
        ours, theirs = grouped.get_group(arm), untuned[untuned["combination"] == arm]
        change = round(ours["WER beam 5"].mean() - theirs["WER beam 5"].mean(), 2) + 0.0 if len(theirs) else float("nan")  # no "-0.00"
        lines.append(
            f"| {arm} | {_cell(theirs, 'WER beam 5') if len(theirs) else '-'} | {_cell(ours, 'WER beam 5')} | {change:+.2f} "
            f"| {_cell(theirs, 'PER beam 5') if len(theirs) else '-'} | {_cell(ours, 'PER beam 5')} "
            f"| {_values(ours['params'].iloc[0])} | {ours['train min'].mean():.1f} |"
        )
    return "\n".join(lines)


def trials(client: MlflowClient, experiment: str) -> str:
    """Each arm's trials (one column per trial number, trial 0 the baseline): the validation exact
    match of the weights each kept, the best in bold; one row per arm, the best first."""
    runs = client.search_runs([experiment_id(client, experiment)], "tags.`attnlab.tune.trial` LIKE '%'", max_results=50000)
    scores: dict[str, dict[int, float]] = {}
    for run in runs:
        tags = run.data.tags
        value = run.data.metrics.get("selected_val_exact_match")
        if run.info.status == "FINISHED" and value is not None:
            scores.setdefault(combination(tags), {})[int(tags["attnlab.tune.trial"])] = value
    numbers = sorted({n for arm in scores.values() for n in arm})
    lines = ["| arm | " + " | ".join("0 (baseline)" if n == 0 else str(n) for n in numbers) + " |", "|---" * (len(numbers) + 1) + "|"]
    for arm, values in sorted(scores.items(), key=lambda item: -max(item[1].values())):
        best = max(values.values())
        cells = [("-" if n not in values else f"**{values[n]:.3f}**" if values[n] == best else f"{values[n]:.3f}") for n in numbers]
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def seed_runs(tuned: pd.DataFrame) -> dict[str, dict[int, str]]:
    """Combination -> seed -> run id of the tuned runs (:func:`cmudict_study_table.study_runs`'s rows)."""
    return {arm: dict(zip(group["seed"], group["run_id"], strict=True)) for arm, group in tuned.groupby("combination")}


def ranking_arms(arms: dict[str, dict[int, str]]) -> dict[str, dict[int, str]]:
    """``arms`` (combination -> seed -> run id) labelled as the study's driver labels them
    (``additive/bigru/rnn``), the input of :func:`cmudict_tuned_study.ranking`."""
    return {arm.replace(" (", "/").replace(")", ""): runs for arm, runs in arms.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--untuned", type=Path, required=True, help="the untuned study's store folder (with mlflow.db)")
    parser.add_argument("--experiment", default="cmudict-tuned")
    parser.add_argument("--trials-experiment", default="cmudict-tuned-trials")
    args = parser.parse_args()
    database = args.untuned / "mlflow.db"
    if not database.is_file():
        raise SystemExit(f"--untuned {args.untuned}: no mlflow.db there; unpack benchmarks/cmudict_study/store.tar.xz first")
    untuned = study_runs(MlflowClient(f"sqlite:///{database}"), "cmudict-study")
    use_store()
    tuned = study_runs(MlflowClient(), args.experiment)
    print(beside(untuned, tuned))
    print()
    print(trials(MlflowClient(), args.trials_experiment))
    print()
    print(ranking(ranking_arms(seed_runs(tuned))))


if __name__ == "__main__":
    main()
