"""What a sweep shows of its runs, task by task: figures for the tasks that have finished runs
(none for a task whose runs all failed: an empty figure says nothing), and a parent explorer
page with every finished run on the same inputs."""

from __future__ import annotations

import json
import re

from attnlab.evaluation.sweep_results import (
    explorer_runs,
    finished_by_label,
    result_tasks,
    task_file,
)

DATA = re.compile(r'<script type="application/json" id="explorer-data">(.*?)</script>', re.DOTALL)


def _failed(label: str, seed: int, task: str = "reverse") -> dict:
    return {"label": label, "seed": seed, "task": task, "status": "FAILED", "error": "RuntimeError: boom"}


def _finished(label: str, seed: int, task: str, **summary) -> dict:
    return {"label": label, "seed": seed, "task": task, "status": "FINISHED", "summary": {"run_id": f"{label}-{seed}", **summary}}


def test_a_task_whose_runs_all_failed_has_no_figure():
    results = [_failed(label, seed) for label in ("dot", "additive") for seed in (0, 1)]
    assert result_tasks(results) == ["reverse"]
    assert finished_by_label(results, ["dot", "additive"], "reverse") == {}


def test_only_the_task_with_finished_runs_gets_figures_named_by_task():
    results = [_failed("dot", 0, "reverse"), _finished("dot", 0, "date"), _failed("additive", 0, "date")]
    assert result_tasks(results) == ["reverse", "date"]
    assert finished_by_label(results, ["dot", "additive"], "reverse") == {}
    by_label = finished_by_label(results, ["dot", "additive", "general"], "date")
    assert by_label == {"dot": [{"run_id": "dot-0"}], "additive": []}  # a label without runs of the task is left out
    assert task_file("learning_curves", "date", results) == "learning_curves_date.png"
    assert task_file("explorer", "date", results[1:2], ".html") == "explorer.html"  # one task: no suffix


def test_a_sweep_parent_page_shows_every_finished_run_on_the_same_inputs(tmp_path):
    from attnlab.data.splits import make_splits
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.viz.explorer import write_explorer
    from attnlab.viz.explorer_data import (
        model_entry,
        model_views,
        sweep_document,
        sweep_examples,
        sweep_note,
    )

    base = ExperimentConfig(task="reverse", hidden_size=16, embedding_dim=8)
    task = build_task(base)
    splits = make_splits(task, (50, 10, 30), 0)
    probe = [splits.test[7].source, splits.test[7].target]
    shared = sweep_examples(splits.test, probe, count=5)
    assert [ex.source for ex in shared][:1] == [probe[0]] and len(shared) == 6
    results = []
    for scorer in ("dot", "additive", "none"):
        config = base.model_copy(update={"scorer": scorer})
        compared = model_views(build_model(config, task), [ex.source for ex in shared])
        results.append(_finished(scorer, 0, "reverse", metrics={"test_exact_match": 0.0}, compared=compared))
    results.append(_failed("general", 0))
    models = [model_entry(*run) for run in explorer_runs(results, "reverse")]
    title = "attnlab sweep scorer=dot,additive seeds=0"
    page = write_explorer(sweep_document(title, models, shared, sweep_note(len(shared), 0, 1)), tmp_path / "explorer.html")
    document = json.loads(DATA.search(page.read_text(encoding="utf-8")).group(1))
    assert document["title"] == title
    assert [m["name"] for m in document["models"]] == ["dot seed 0", "additive seed 0", "none seed 0"]
    sources = [["".join(e["source_tokens"]) for e in m["examples"]] for m in document["models"]]
    assert sources[0] == sources[1] == sources[2] and sorted(sources[0]) == sorted(ex.source for ex in shared)
    targets = {ex.source: ex.target for ex in shared}
    for model in document["models"]:
        assert all(e["target"] == targets["".join(e["source_tokens"])] for e in model["examples"])
    assert [m["views"] for m in document["models"]] == [["average"], ["average"], []]
    assert document["note"].startswith("every combination on the same 6 test examples")
    assert explorer_runs(results[3:], "reverse") == []  # no finished run: no page
