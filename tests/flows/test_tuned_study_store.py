"""The tuned CMUdict study's published store holds what its page says: extracted and relocated as
docs/cmudict-tuned-study.md tells, with the untuned study's store beside it, its runs give exactly
the page's three tables (untuned beside tuned, each arm's trials, the ranking with paired
significance)."""

from __future__ import annotations

from _study_stores import relocated_store, unpacked
from benchmark_scripts import BENCHMARKS, ROOT, benchmark_script

TUNED = BENCHMARKS / "cmudict_tuned_study" / "store.tar.xz"
UNTUNED = BENCHMARKS / "cmudict_study" / "store.tar.xz"


def test_the_tuned_study_store_gives_the_published_tables(capsys, tmp_path, monkeypatch):
    untuned_store = unpacked(UNTUNED, tmp_path / "untuned")
    relocated_store(TUNED, tmp_path / "tuned", capsys, monkeypatch)

    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    table = benchmark_script("cmudict_tuned_study_table")
    untuned = table.study_runs(MlflowClient(f"sqlite:///{untuned_store / 'mlflow.db'}"), "cmudict-study")
    use_store()
    client = MlflowClient()
    tuned = table.study_runs(client, "cmudict-tuned")
    assert len(tuned) == 21 and sorted(tuned.groupby("combination").size()) == [3] * 7
    page = (ROOT / "docs" / "cmudict-tuned-study.md").read_text()
    for made in (
        table.beside(untuned, tuned),
        table.trials(client, "cmudict-tuned-trials"),
        table.ranking(table.ranking_arms(table.seed_runs(tuned))),
    ):
        for row in made.splitlines():
            assert row in page, f"docs/cmudict-tuned-study.md lacks the store's row {row!r}"
