"""The tuned CMUdict study's published store holds what its page says: extracted and relocated as
docs/cmudict-tuned-study.md tells, with the untuned study's store beside it, its runs give exactly
the page's three tables (untuned beside tuned, each arm's trials, the ranking with paired
significance)."""

from __future__ import annotations

import importlib.util
import sys
import tarfile
from pathlib import Path

from _flowkit import point_at
from test_store_integrity import attnlab

ROOT = Path(__file__).parents[2]
BENCHMARKS = ROOT / "benchmarks"
TUNED = BENCHMARKS / "cmudict_tuned_study" / "store.tar.xz"
UNTUNED = BENCHMARKS / "cmudict_study" / "store.tar.xz"


def table_module():
    """benchmarks/cmudict_tuned_study_table.py, the script the page's tables come from."""
    sys.path.insert(0, str(BENCHMARKS))  # it imports the study's other scripts beside it
    try:
        spec = importlib.util.spec_from_file_location("cmudict_tuned_study_table", BENCHMARKS / "cmudict_tuned_study_table.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


def test_the_tuned_study_store_gives_the_published_tables(capsys, tmp_path, monkeypatch):
    for archive, folder in ((TUNED, tmp_path / "tuned"), (UNTUNED, tmp_path / "untuned")):
        with tarfile.open(archive) as opened:
            opened.extractall(folder, filter="data")
    store = point_at(tmp_path / "tuned" / "mlflow", monkeypatch)
    code, out, err = attnlab(capsys, "store", "relocate")
    assert code == 0 and out.startswith(f"relocated the MLflow store {store} from "), err

    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    table = table_module()
    untuned = table.study_runs(MlflowClient(f"sqlite:///{tmp_path / 'untuned' / 'mlflow' / 'mlflow.db'}"), "cmudict-study")
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
