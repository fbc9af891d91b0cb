"""The CMUdict study's table from its MLflow store: per combination, mean +- std over seeds of
PER and WER (beam 5 and greedy), training minutes per run and parameters, as Markdown.

Reads the finished sweep runs of the experiment (each configuration and seed once: the latest
finished run of its key, as a resumed sweep counts them) and prints the table the README quotes.

Run: ATTNLAB_MLFLOW_DIR=/path/to/store python benchmarks/cmudict_study_table.py [--experiment cmudict-study]
"""

from __future__ import annotations

import argparse

import pandas as pd
from mlflow.entities import Run

from attnlab.flows.tracking.store import use_store
from attnlab.ops.sweep_resume import RUN_KEY, FinishedRun, reusable
from mlflow import MlflowClient

#: Column -> (metric, scale): error rates in percent, training time in minutes.
COLUMNS = {
    "PER beam 5": ("test_token_error_rate", 100),
    "WER beam 5": ("test_sequence_error_rate", 100),
    "PER greedy": ("test_greedy_token_error_rate", 100),
    "WER greedy": ("test_greedy_sequence_error_rate", 100),
    "train min": ("train_seconds", 1 / 60),
}


def experiment_id(client: MlflowClient, experiment: str) -> str:
    """The id of the experiment named ``experiment``; exits naming it when the store has none."""
    found = client.get_experiment_by_name(experiment)
    if found is None:
        raise SystemExit(f"no experiment {experiment!r} in {client.tracking_uri}")
    return found.experiment_id


def combination(tags: dict[str, str]) -> str:
    """A run's combination as the tables name it: ``additive (bigru/rnn)``."""
    return f"{tags['scorer']} ({tags['encoder']}/{tags['decoder']})"


def latest_runs(client: MlflowClient, experiment: str) -> list[Run]:
    """The finished sweep runs of ``experiment``, each configuration and seed once: the latest
    finished run of its sweep key, as a resumed sweep counts them."""
    runs = client.search_runs(
        [experiment_id(client, experiment)], f"attributes.status = 'FINISHED' and tags.`{RUN_KEY}` LIKE '%'", max_results=50000
    )
    by_id = {run.info.run_id: run for run in runs}
    keys = sorted({run.data.tags[RUN_KEY] for run in runs})
    latest = reusable(keys, [FinishedRun(r.info.run_id, r.data.tags[RUN_KEY], r.info.end_time or 0) for r in runs])
    return [by_id[run_id] for run_id in latest.values()]


def study_runs(client: MlflowClient, experiment: str) -> pd.DataFrame:
    """One row per configuration and seed: combination, seed, the metrics of :data:`COLUMNS`,
    parameters, and the run's id and params (a dict)."""
    rows = []
    for run in latest_runs(client, experiment):
        run_id = run.info.run_id
        tags, metrics = run.data.tags, run.data.metrics
        row = {"combination": combination(tags), "seed": int(run.data.params["seed"])}
        row.update({name: metrics.get(metric, float("nan")) * scale for name, (metric, scale) in COLUMNS.items()})
        row["parameters"] = metrics.get("parameters", float("nan"))
        row.update(run_id=run_id, params=dict(run.data.params))
        rows.append(row)
    return pd.DataFrame(rows)


def markdown(runs: pd.DataFrame) -> str:
    """The table: one row per combination, best beam-5 WER first."""
    lines = ["| combination | seeds | " + " | ".join(COLUMNS) + " | parameters |", "|---" * (len(COLUMNS) + 3) + "|"]
    grouped = runs.groupby("combination")
    order = grouped["WER beam 5"].mean().sort_values().index
    for name in order:
        group = grouped.get_group(name)
        cells = [f"{group[c].mean():.2f} ± {group[c].std(ddof=0):.2f}" if c != "train min" else f"{group[c].mean():.1f}" for c in COLUMNS]
        lines.append(f"| {name} | {len(group)} | " + " | ".join(cells) + f" | {group['parameters'].mean():,.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="cmudict-study")
    args = parser.parse_args()
    use_store()
    runs = study_runs(MlflowClient(), args.experiment)
    print(markdown(runs))
    print(f"\n{len(runs)} runs; training time per run on one thread, two runs at a time on 2 cores")


if __name__ == "__main__":
    main()
