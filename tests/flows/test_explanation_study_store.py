"""The explanation study's published store holds what its page says: extracted and relocated as
docs/explanation-study.md tells, its runs give exactly the page's tables; and the tables' rule for
the best explanation (best mean; a rival as good on some seed is named beside it)."""

from __future__ import annotations

import pandas as pd
from _study_stores import relocated_store
from benchmark_scripts import BENCHMARKS, ROOT, benchmark_script

STORE = BENCHMARKS / "explanation_study" / "store.tar.xz"


def seeds(**columns: list[float]) -> pd.DataFrame:
    """One combination's runs: seeds 0, 1, 2 and each ``<explanation>_<measure>`` column given."""
    return pd.DataFrame({"seed": [0, 1, 2], **columns})


def test_the_best_explanation_is_the_best_mean_with_the_rivals_no_seed_separates():
    best = benchmark_script("explanation_study_table").best
    clear = seeds(attention_error_rate=[0.10, 0.12, 0.11], saliency_error_rate=[0.20, 0.21, 0.19])
    assert best(clear, "error_rate", "lower") == "attention"
    assert best(clear, "error_rate", "higher") == "saliency"
    overlap = seeds(attention_error_rate=[0.10, 0.30, 0.11], saliency_error_rate=[0.20, 0.21, 0.19])
    assert best(overlap, "error_rate", "lower") == "attention ~ saliency"  # saliency wins seed 1
    tie = seeds(
        saliency_comprehensiveness=[0.0, 0.0, 0.0],
        input_x_gradient_comprehensiveness=[-0.00001, 0.0, 0.0],
        integrated_gradients_comprehensiveness=[-0.2, -0.1, -0.3],
    )
    assert best(tie, "comprehensiveness", "higher") == "saliency ~ IxG"  # equal to 3 decimals
    no_attention = seeds(attention_error_rate=[float("nan")] * 3, saliency_error_rate=[0.5, 0.4, 0.6])
    assert best(no_attention, "error_rate", "lower") == "saliency"
    assert best(seeds(), "error_rate", "lower") == "-"


def test_the_study_store_gives_the_published_tables(capsys, tmp_path, monkeypatch):
    relocated_store(STORE, tmp_path, capsys, monkeypatch)

    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    use_store()
    table = benchmark_script("explanation_study_table")
    page = (ROOT / "docs" / "explanation-study.md").read_text()
    for task, experiment in table.EXPERIMENTS.items():
        runs = table.study_runs(MlflowClient(), experiment)
        assert len(runs) == 36 and sorted(runs.groupby(["arm", "scorer"]).size()) == [3] * 12, task
        for line in table.report(runs).splitlines():
            assert line in page, f"docs/explanation-study.md differs from the store's {task} tables at {line!r}"
