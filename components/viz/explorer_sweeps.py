"""The attention explorer's page of a sweep: every combination on the same sources
(:func:`sweep_document`), the examples it shows (:func:`sweep_examples`, :func:`sweep_note`), and the
model it opens on (:func:`opening_model`).

Pure: no Prefect, no MLflow; plain dicts and lists out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from attnlab.plugins import Example
from attnlab.viz.explorer_document import SCHEMA_VERSION
from attnlab.viz.explorer_views import gold_positions, weight_count, within_budget

#: Sources every combination of a sweep is shown on.
SWEEP_EXAMPLES = 20


def with_answers(view: Mapping[str, Any], example: Example, references: Sequence[str] = ()) -> dict[str, Any]:
    """A :func:`model_views` example of a bare source given ``example``'s target and gold: right
    when the output equals the target or any of ``references`` (every target of that source),
    and then shown with the reference it matched."""
    output = view["output"]
    steps = len(view["output_tokens"])
    correct = output == example.target or output in references
    return {**view, "target": output if correct else example.target, "correct": correct, "gold": gold_positions(example, steps)}


def sweep_document(
    title: str, models: Sequence[Mapping[str, Any]], examples: Sequence[Example], note: str | None = None,
    references: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The page of a sweep: ``models`` are :func:`model_entry` dicts whose examples are
    :func:`model_views` of the sources of ``examples``, in that order (every combination on the
    same inputs). Targets and gold come from ``examples`` (``references``: source -> all its
    targets, for sources with several); the examples most models got wrong come first, the
    same order for every model, as many as :data:`WEIGHT_BUDGET` allows. Raises ValueError when a
    model's sources differ.
    """
    sources = [example.source for example in examples]
    answered = []
    for model in models:
        got = [view["source"] for view in model["examples"]]
        if got != sources:
            raise ValueError(f"model {model['name']!r} was shown other sources than the sweep's {len(sources)} examples")
        refs = references or {}
        answered.append([with_answers(view, ex, refs.get(ex.source, ())) for view, ex in zip(model["examples"], examples)])
    misses = [sum(not views[i]["correct"] for views in answered) for i in range(len(sources))]
    order = sorted(range(len(sources)), key=lambda i: -misses[i])  # stable: test order among equals
    order = order[: within_budget([sum(weight_count(views[i]) for views in answered) for i in order])]
    if len(order) < len(sources):
        note = f"{note + '; ' if note else ''}the first {len(order)} of them shown, to keep the page small"
    entries = [{**model, "examples": [views[i] for i in order]} for model, views in zip(models, answered)]
    return {"version": SCHEMA_VERSION, "title": title, "note": note, "models": entries, "opens_on": opening_model(entries)}


def _finite_or_lowest(value: float) -> float:
    """``value``, or -inf when it is NaN or infinite (a measure that ranks last)."""
    return value if math.isfinite(value) else -math.inf


def opening_model(models: Sequence[Mapping[str, Any]]) -> int:
    """The index of the model a comparison page opens on: the best one with attention weights
    to show (views), by test exact match, then alignment accuracy (a missing or NaN one counts
    as lowest), then the first in ``models``' order; 0 when no model has attention weights."""

    def rank(index: int) -> tuple[float, float, int]:
        metrics = models[index].get("metrics") or {}
        exact, alignment = (float(metrics.get(key, math.nan)) for key in ("exact_match", "alignment_accuracy"))
        return (_finite_or_lowest(exact), _finite_or_lowest(alignment), -index)

    attending = [index for index, model in enumerate(models) if model.get("views")]
    return max(attending, key=rank, default=0)


def sweep_examples(test: Sequence[Example], probe: Sequence[str] | None = None, count: int = SWEEP_EXAMPLES) -> list[Example]:
    """The examples a sweep shows every combination on: the test example of ``probe`` (the
    ``[source, target]`` of :func:`attnlab.data.examples.pick_probe`, drawn under every combination
    as well) first, then the first ``count`` test examples; no source twice."""
    chosen = [ex for ex in test if probe is not None and [ex.source, ex.target] == list(probe)][:1]
    for example in test[:count]:
        if all(example.source != other.source for other in chosen):
            chosen.append(example)
    return chosen


def sweep_note(count: int, data_seed: int, seeds: int) -> str:
    """What a sweep's page shows: ``count`` test examples of the data of seed ``data_seed``,
    under ``seeds`` seeds."""
    note = f"every combination on the same {count} test examples (of the seed-{data_seed} data), the ones most runs got wrong first"
    if seeds > 1:
        note += "; runs of other seeds drew other splits and may have trained on some of them"
    return note
