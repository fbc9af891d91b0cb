"""The explanation study's tables from its MLflow store: per combination (scorer and arm), each
explanation's measure as mean +- std over seeds, and which explanation is best.

Per task (experiments ``explanation-study-date`` and ``explanation-study-cmudict``) it prints, as
Markdown: each combination's test exact match, then alignment error rate (date only: the task
with gold alignments), comprehensiveness, sufficiency, flip rate and Kendall's tau with
attention; then how often each explanation is best on the combinations that have attention. The best is the one with the best mean; when another is
as good or better on some seed, the cell names both (``IG ~ attention``: IG is integrated
gradients, IxG input x gradient): the seeds do not tell them apart.

Run: ATTNLAB_MLFLOW_DIR=/path/to/store python benchmarks/explanation_study_table.py
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))  # the study scripts beside this one

from cmudict_study_table import latest_runs  # noqa: E402

from attnlab.flows.tracking.store import use_store  # noqa: E402
from attnlab.lab.metric_catalogue import EXPLANATIONS  # noqa: E402
from mlflow import MlflowClient  # noqa: E402

#: The study's experiments, one per task.
EXPERIMENTS = {"date": "explanation-study-date", "cmudict": "explanation-study-cmudict"}
#: How the tables name each explanation: in a column's heading, and in the *best* column.
NAMES = {explanation: explanation.replace("_", " ") for explanation in EXPLANATIONS}
SHORT = {"attention": "attention", "saliency": "saliency", "input_x_gradient": "IxG", "integrated_gradients": "IG"}
#: Measure -> (title, which direction is better; None: no best), in the order printed.
MEASURES = {
    "error_rate": ("alignment error rate (AER; lower is nearer the gold alignment)", "lower"),
    "comprehensiveness": ("comprehensiveness (probability lost when the top source is erased; higher is more faithful)", "higher"),
    "sufficiency": ("sufficiency (probability lost when only the top source is kept; lower is more faithful)", "lower"),
    "flip_top1": ("flip rate (share of output tokens that change when the top source is erased; higher is more faithful)", "higher"),
    "tau_attention": ("Kendall's tau of each attribution with attention (1: the same order of the sources)", None),
}
#: Measures the verdict counts: the most aligned and the most faithful.
VERDICTS = {
    "error_rate": "most aligned (AER)",
    "comprehensiveness": "most faithful (comprehensiveness)",
    "sufficiency": "most faithful (sufficiency)",
    "flip_top1": "most faithful (flip rate)",
}


def arm(tags: dict[str, str]) -> str:
    """The arm a run belongs to: ``bigru/rnn`` or ``transformer``."""
    return "transformer" if tags["encoder"] == tags["decoder"] == "transformer" else f"{tags['encoder']}/{tags['decoder']}"


def study_runs(client: MlflowClient, experiment: str) -> pd.DataFrame:
    """One row per configuration and seed (:func:`latest_runs`): scorer, arm, seed, test exact
    match and every ``test_explain_*`` metric (NaN where a run has none)."""
    rows = []
    for run in latest_runs(client, experiment):
        tags, metrics = run.data.tags, run.data.metrics
        row = {"scorer": tags["scorer"], "arm": arm(tags), "seed": int(run.data.params["seed"])}
        row["exact_match"] = metrics.get("test_exact_match", math.nan)
        row.update({name.removeprefix("test_explain_"): value for name, value in metrics.items() if name.startswith("test_explain_")})
        rows.append(row)
    return pd.DataFrame(rows)


def best(runs: pd.DataFrame, measure: str, better: str) -> str:
    """The explanation whose mean ``measure`` over the seeds in ``runs`` (one combination) is
    best (its :data:`SHORT` name), ``-`` when none has the measure; ``A ~ B`` when B is as good as
    A or better on some seed (to the 3 decimals printed)."""
    columns = {e: f"{e}_{measure}" for e in EXPLANATIONS if f"{e}_{measure}" in runs and runs[f"{e}_{measure}"].notna().all()}
    if not columns:
        return "-"
    sign = 1 if better == "lower" else -1
    means = {e: sign * runs[c].mean() for e, c in columns.items()}
    winner = min(means, key=means.__getitem__)
    by_seed = runs.set_index("seed").round(3)
    rivals = [e for e in columns if e != winner and (sign * by_seed[columns[e]] <= sign * by_seed[columns[winner]]).any()]
    return " ~ ".join(SHORT[e] for e in [winner, *sorted(rivals, key=means.__getitem__)])


def mean_std(values: pd.Series) -> str:
    """``mean ± std`` of one combination's seeds (population std), ``-`` when none has a value."""
    return "-" if values.isna().all() else f"{values.mean():.3f} ± {values.std(ddof=0):.3f}"


def measure_table(runs: pd.DataFrame, measure: str) -> str:
    """A Markdown table of ``measure``: a row per combination (arm, then scorer), a column per
    explanation (mean +- std over seeds), and the best when the measure has a direction."""
    title, better = MEASURES[measure]
    present = [e for e in EXPLANATIONS if f"{e}_{measure}" in runs]
    header = ["scorer", "arm", *(NAMES[e] for e in present)] + (["best"] if better else [])
    lines = [f"**{title}**", "", "| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    for (arm_name, scorer), group in runs.groupby(["arm", "scorer"], sort=True):
        cells = [scorer, arm_name]
        for explanation in present:
            cells.append(mean_std(group[f"{explanation}_{measure}"]))
        if better:
            cells.append(best(group, measure, better))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def accuracy_table(runs: pd.DataFrame) -> str:
    """A Markdown table of each combination's test exact match (mean +- std over seeds): how well
    trained the models explained are."""
    lines = ["**test exact match of the models explained**", "", "| scorer | arm | exact match |", "|---|---|---|"]
    for (arm_name, scorer), group in runs.groupby(["arm", "scorer"], sort=True):
        lines.append(f"| {scorer} | {arm_name} | {mean_std(group['exact_match'])} |")
    return "\n".join(lines)


def verdict_table(runs: pd.DataFrame) -> str:
    """How many combinations with attention (every scorer but ``none``) each explanation is best
    on, per verdict; ``(n clear)`` counts those no other explanation equals on any seed."""
    verdicts = [v for v in VERDICTS if any(f"{e}_{v}" in runs for e in EXPLANATIONS)]
    lines = ["| explanation | " + " | ".join(VERDICTS[v] for v in verdicts) + " |", "|---" * (len(verdicts) + 1) + "|"]
    attending = [group for _, group in runs.groupby(["arm", "scorer"]) if group["attention_comprehensiveness"].notna().all()]
    winners = {v: [best(group, v, MEASURES[v][1] or "") for group in attending] for v in verdicts}
    for explanation in EXPLANATIONS:
        cells = []
        for verdict in verdicts:
            won = [w for w in winners[verdict] if w.split(" ~ ")[0] == SHORT[explanation]]
            clear = sum(" ~ " not in w for w in won)
            cells.append(f"{len(won)} of {len(winners[verdict])} ({clear} clear)")
        lines.append(f"| {NAMES[explanation]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(runs: pd.DataFrame) -> str:
    """Every table of one task's runs, blank-line separated."""
    tables = [measure_table(runs, m) for m in MEASURES if any(f"{e}_{m}" in runs and runs[f"{e}_{m}"].notna().any() for e in EXPLANATIONS)]
    verdicts = "**best explanation per combination with attention (every scorer but none)**\n\n" + verdict_table(runs)
    return "\n\n".join([accuracy_table(runs), *tables, verdicts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=sorted(EXPERIMENTS), action="append", help="only this task (repeatable; default: both)")
    args = parser.parse_args()
    use_store()
    client = MlflowClient()
    for task in args.task or list(EXPERIMENTS):
        runs = study_runs(client, EXPERIMENTS[task])
        print(f"### {task} ({len(runs)} runs)\n\n{report(runs)}\n")


if __name__ == "__main__":
    main()
