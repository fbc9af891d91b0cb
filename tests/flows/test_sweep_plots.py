"""A sweep's figures: drawn for the tasks that have finished runs, none for a task whose runs all
failed (an empty figure says nothing)."""

from __future__ import annotations

from pathlib import Path

from attnlab.flows import sweep_flow


class _Client:
    """Takes what _log_comparison writes to the parent run."""

    def __init__(self) -> None:
        self.tables: list[str] = []
        self.uploaded: list[str] = []

    def log_table(self, run_id, data, artifact_file) -> None:
        self.tables.append(artifact_file)

    def log_batch(self, run_id, metrics=()) -> None:
        pass

    def log_artifacts(self, run_id, folder, artifact_path) -> None:
        self.uploaded = sorted(p.name for p in Path(folder).iterdir())


def _failed(label: str, seed: int, task: str = "reverse") -> dict:
    return {"label": label, "seed": seed, "task": task, "status": "FAILED", "error": "RuntimeError: boom"}


def _finished(label: str, seed: int, task: str) -> dict:
    summary = {
        "run_id": f"{label}-{seed}", "metrics": {"test_exact_match": 1.0}, "by_length": [{"length": 5, "count": 4, "exact_match": 1.0}],
        "history": [{"epoch": 1, "train_loss": 0.5, "val_exact_match": 1.0}], "probe": None,
    }  # fmt: skip
    return {"label": label, "seed": seed, "task": task, "status": "FINISHED", "summary": summary}


def test_a_sweep_whose_runs_all_failed_draws_no_figures(tmp_path):
    client = _Client()
    results = [_failed(label, seed) for label in ("dot", "additive") for seed in (0, 1)]
    shown = sweep_flow._log_comparison(client, "parent", results, ["dot", "additive"], [], {}, tmp_path)
    assert shown["plots"] == [] and client.uploaded == [] and not list(tmp_path.glob("*.png"))
    assert client.tables == ["tables/runs.json", "tables/comparison.json"]  # the failures are still reported


def test_only_the_task_with_finished_runs_gets_figures(tmp_path):
    client = _Client()
    results = [_failed("dot", 0, "reverse"), _finished("dot", 0, "date")]
    shown = sweep_flow._log_comparison(client, "parent", results, ["dot"], [], {"date": 10}, tmp_path)
    names = ["accuracy_by_length_date.png", "learning_curves_date.png", "attention_by_combination_date.png"]
    assert shown["plots"] == [f"plots/{name}" for name in names] and client.uploaded == sorted(names)
