"""The CMUdict study's published store holds what the docs say: extracted and relocated as
docs/cmudict-study.md tells, its runs give exactly the table the page and the README print, and
its champion predicts."""

from __future__ import annotations

import importlib.util
import tarfile
from pathlib import Path

from _flowkit import point_at
from test_store_integrity import attnlab

ROOT = Path(__file__).parents[2]
STORE = ROOT / "benchmarks" / "cmudict_study" / "store.tar.xz"


def study_table_module():
    """benchmarks/cmudict_study_table.py, the script the page's table comes from."""
    spec = importlib.util.spec_from_file_location("cmudict_study_table", ROOT / "benchmarks" / "cmudict_study_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_study_store_gives_the_published_table_and_its_champion_predicts(capsys, tmp_path, monkeypatch):
    with tarfile.open(STORE) as archive:
        archive.extractall(tmp_path, filter="data")
    store = point_at(tmp_path / "mlflow", monkeypatch)
    code, out, err = attnlab(capsys, "store", "relocate")
    assert code == 0 and out.startswith(f"relocated the MLflow store {store} from "), err

    from attnlab.flows.tracking.store import use_store
    from mlflow import MlflowClient

    use_store()
    table = study_table_module()
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
