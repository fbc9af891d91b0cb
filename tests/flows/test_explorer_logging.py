"""The attention explorer page where it is logged or written: every train run
(``attention/explorer.html``, with the snapshots of every epoch) and ``attnlab predict --html``
(a sweep's parent page: tests/components/test_sweep_results.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _flowkit import assert_one_line_error, client_for

from attnlab.evaluation.attribution import METHODS
from attnlab.flows.cli import app as cli
from attnlab.viz.explorer_views import EXPLAINED_EXAMPLES

DATA = re.compile(r'<script type="application/json" id="explorer-data">(.*?)</script>', re.S)


def embedded(page: Path) -> dict:
    """The document inside an explorer page."""
    text = page.read_text(encoding="utf-8")
    match = DATA.search(text)
    assert match, "no explorer-data script in the page"
    return json.loads(match.group(1))  # "<\/" is a valid JSON escape of "/"


@pytest.mark.slow
def test_a_train_run_logs_the_explorer_with_snapshots_inside_the_first_epoch_and_after_every_epoch(learned_store):
    store, summary = learned_store
    client, run_id = client_for(store), summary["run_id"]
    assert "attention/explorer.html" in {f.path for f in client.list_artifacts(run_id, "attention")}
    page = Path(client.download_artifacts(run_id, "attention/explorer.html"))
    assert page.stat().st_size < 1_000_000
    document = embedded(page)
    run_name = client.get_run(run_id).info.run_name
    assert document["title"] == f"attnlab run {run_name}"
    (model,) = document["models"]
    assert model["views"] == ["average"]
    epochs = len(summary["history"])
    snapshots = model["snapshots"]
    # before training, 7 steps inside the first epoch (24 steps of 64 examples), after every epoch
    assert snapshots["steps"][:9] == [0, 3, 6, 9, 12, 15, 18, 21, 24]
    assert snapshots["epochs"] == [0] + [1] * 8 + list(range(2, epochs + 1))
    assert [label for label in snapshots["labels"] if label.startswith("after epoch")] == [
        f"after epoch {e} (step {24 * e})" for e in range(1, epochs + 1)
    ]
    assert len(snapshots["examples"]) == 3
    assert all(len(probe["weights"]) == 8 + epochs for probe in snapshots["examples"])
    for name in ("val_probe_exact_match", "val_probe_alignment_accuracy", "val_probe_alignment_within_one"):
        steps = [m.step for m in client.get_metric_history(run_id, name)]
        assert sorted(steps) == snapshots["steps"], name
    assert "plots/alignment_over_training.png" in {f.path for f in client.list_artifacts(run_id, "plots")}
    examples = model["examples"]
    assert len(examples) == 100  # the whole test split: fewer than the cap
    correct = [example["correct"] for example in examples]
    assert correct == sorted(correct)  # wrong ones first
    assert sum(correct) / len(correct) == pytest.approx(summary["metrics"]["test_exact_match"])
    explained = f"the first {EXPLAINED_EXAMPLES} explained by gradient attributions too"
    assert document["note"] == f"all 100 test examples ({correct.count(False)} wrong), wrong ones first; {explained}"
    assert model["explanations"] == list(METHODS)
    assert [list(example.get("explained", {})) for example in examples] == [list(METHODS)] * EXPLAINED_EXAMPLES + [[]] * 90
    assert all(example["gold"] is not None for example in examples)
    assert model["metrics"]["exact_match"] == pytest.approx(summary["metrics"]["test_exact_match"])


def _bundle(tmp_path: Path, **fields) -> Path:
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(hidden_size=16, embedding_dim=8, **fields)
    return save_bundle(tmp_path / "bundle", config, build_model(config, build_task(config)))


def test_predict_writes_the_page_for_its_inputs(capsys, tmp_path):
    bundle = _bundle(tmp_path, scorer="multihead", scorer_options={"heads": 2})
    page = tmp_path / "pages" / "page.html"
    code = cli.main(["predict", "25-12-2023", "01-02-2003", "--model", str(bundle), "--html", str(page), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["html"] == str(page)
    (model,) = embedded(page)["models"]
    assert model["views"] == ["average", "head 1", "head 2"]
    assert ["".join(example["source_tokens"]) for example in model["examples"]] == ["25-12-2023", "01-02-2003"]
    outputs = [p["prediction"] for p in json.loads(out)["predictions"]]
    for example, output in zip(model["examples"], outputs):
        assert example["target"] is None and example["correct"] is None and example["gold"] is None
        assert "".join(t for t in example["output_tokens"] if t != "<eos>") == output
        assert list(example["explained"]) == list(METHODS)  # each input explained by every method
    assert model["snapshots"] is None and model["explanations"] == list(METHODS)
    assert embedded(page)["note"] == "2 inputs given to predict; no known answers; each explained by gradient attributions too"


@pytest.mark.parametrize("where", ["folder", "under a file"])
def test_predict_refuses_an_html_path_it_cannot_write_before_loading_the_model(capsys, tmp_path, monkeypatch, where):
    from attnlab.flows.cli import predict as predict_cli

    monkeypatch.setattr(predict_cli, "load_model", lambda *args: pytest.fail("the model was loaded"))
    bundle = _bundle(tmp_path)
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    target = tmp_path if where == "folder" else tmp_path / "notes.txt" / "page.html"
    code = cli.main(["predict", "25-12-2023", "--model", str(bundle), "--html", str(target)])
    _, err = capsys.readouterr()
    assert code == 2
    assert_one_line_error(err, "--html", str(target))


@pytest.mark.parametrize("failure", ["name too long", "refused when written"])
def test_predict_reports_a_page_it_could_not_write_in_one_line(capsys, tmp_path, monkeypatch, failure):
    import attnlab.viz.explorer

    bundle = _bundle(tmp_path)
    target = tmp_path / "page.html"
    if failure == "name too long":
        target = tmp_path / ("x" * 300 + ".html")
    else:

        def refuse(document, path):
            raise PermissionError(13, "Permission denied", str(path))

        monkeypatch.setattr(attnlab.viz.explorer, "write_explorer", refuse)
    code = cli.main(["predict", "25-12-2023", "--model", str(bundle), "--html", str(target)])
    _, err = capsys.readouterr()
    assert code == 2
    assert_one_line_error(err, "--html", "cannot be written")
