"""The CMUdict study's published store holds what the docs say: extracted and relocated as
docs/cmudict-study.md tells, its runs give exactly the table the page and the README print, and
its champion predicts."""

from __future__ import annotations

from _study_stores import relocated_store
from benchmark_scripts import BENCHMARKS, ROOT, benchmark_script
from test_store_integrity import attnlab

STORE = BENCHMARKS / "cmudict_study" / "store.tar.xz"


def test_the_study_store_gives_the_published_table_and_its_champion_predicts(capsys, tmp_path, monkeypatch):
    relocated_store(STORE, tmp_path, capsys, monkeypatch)

    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    use_store()
    table = benchmark_script("cmudict_study_table")
    runs = table.study_runs(MlflowClient(), "cmudict-study")
    assert len(runs) == 21 and sorted(runs.groupby("combination").size()) == [3] * 7
    rows = table.markdown(runs).splitlines()
    page = (ROOT / "docs" / "cmudict-study.md").read_text()
    assert all(row in page for row in rows), "docs/cmudict-study.md's table differs from the store's"
    readme = (ROOT / "README.md").read_text()
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        scorer, per, wer = cells[0].split(" (")[0], cells[2], cells[3]
        assert f"| {wer} | {per} |" in readme, f"the README's row of {scorer} differs from the store's"

    code, out, err = attnlab(capsys, "predict", "--task", "cmudict", "hello", "world")
    assert (code, out) == (0, "hello -> HH EH L OW\nworld -> W ER L D\n"), err
