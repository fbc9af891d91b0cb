"""Explorer documents shared by the page builder's tests and the browser tests (importable from
tests/ as ``explorer_documents``: pytest puts the folder of tests/conftest.py on the path)."""

from __future__ import annotations

import random


def softmax_rows(rng: random.Random, rows: int, cols: int) -> list[list[float]]:
    """[rows, cols] weights like a trained model's: one peak per row, a long tail of small ones."""
    matrix = []
    for r in range(rows):
        row = [rng.random() ** 8 for _ in range(cols)]
        row[r * cols // rows] += 4.0
        total = sum(row)
        matrix.append([w / total for w in row])
    return matrix


def date_document(examples: int = 200, heads: int = 4, probes: int = 3, epochs: int = 10) -> dict:
    """A document of a default-sized date run: 10 source x 12 output characters per example,
    an average and ``heads`` head views, snapshots of ``probes`` examples over ``epochs`` epochs."""
    rng = random.Random(0)
    views = ["average"] + [f"head {h + 1}" for h in range(heads)]
    source, output = list("25-12-2023"), list("2023年12月25日") + ["<eos>"]
    gold = [[6], [7], [8], [9], [], [3], [4], [], [0], [1], []]

    def example(i: int) -> dict:
        return {"source_tokens": list(source), "output_tokens": list(output), "target": "2023年12月25日", "correct": i % 20 != 0,
                "gold": [list(g) for g in gold], "weights": {v: softmax_rows(rng, len(output), len(source)) for v in views}}  # fmt: skip

    snapshots = {"epochs": list(range(1, epochs + 1)), "examples": [
        {"source_tokens": list(source), "output_tokens": output[:-1], "gold": [list(g) for g in gold],
         "weights": [softmax_rows(rng, len(output) - 1, len(source)) for _ in range(epochs)]} for _ in range(probes)]}  # fmt: skip
    return {"version": 1, "title": "attnlab run default", "subtitle": "date task, gru encoder, rnn decoder, multihead scorer",
            "note": f"{examples} of 1,000 test examples: every wrong one, then right ones",
            "models": [{"name": "multihead", "metrics": {"exact_match": 0.95, "alignment_accuracy": 0.6}, "views": views,
                        "examples": [example(i) for i in range(examples)], "snapshots": snapshots}]}  # fmt: skip
