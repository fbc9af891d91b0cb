"""The attention explorer's document: its schema, and the check that turns a given document into
the compact one a page embeds (:func:`compact_document`).

Document (``Lt`` output tokens, ``Ls`` source tokens of one example)::

    {"version": 1, "title": str, "subtitle": str (optional), "note": str (optional),
     "opens_on": int (optional; the index of the model the page shows first, default 0),
     "models": [                                   # one per trained model, at least one
       {"name": str, "metrics": {str: number} (optional),
        "views": ["average", "head 1", ...],       # "average" first; [] when the model has no attention
        "explanations": ["saliency", ...] (optional),  # gradient methods some examples are explained by
        "examples": [                              # in display order (wrong ones first)
          {"source_tokens": [str] * Ls, "output_tokens": [str] * Lt,
           "target": str | None, "correct": bool | None,
           "gold": [[int source position, ...] per output step (at most Lt lists)] | None,
           "weights": {view: [Lt rows of Ls weights in [0, 1]] for every view},
           "explained": {method: [Lt rows of Ls shares in [0, 1]]} (optional; methods of "explanations")}],
        "snapshots": None | {"epochs": [int] * E,     # the epoch of each snapshot (0: untrained)
                             "steps": [int] * E (optional),   # the optimisation step of each
                             "labels": [str] * E (optional),  # the slider's name of each
                             "examples": [{"source_tokens": ..., "output_tokens": ..., "gold": ...,
                                           "weights": [E matrices [Lt, Ls], one per snapshot]}]}}]}

With several models (a sweep's page) every model has the same example sources in the same
order, so the page compares them on one input.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

SCHEMA_VERSION = 1
#: Decimals kept of each attention weight in the page (0.001 is below what a colour shows).
WEIGHT_DECIMALS = 3
#: Slack allowed on a weight outside [0, 1] (float rounding of a softmax).
WEIGHT_SLACK = 1e-4


def compact_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """A checked copy of ``document`` with plain lists and every weight rounded to
    :data:`WEIGHT_DECIMALS` decimals (0 and 1 as integers, the shortest JSON)."""
    _require(isinstance(document, Mapping), "document", "must be a mapping (a dict)")
    version = document.get("version")
    _require(version == SCHEMA_VERSION, "version", f"is {version!r}, expected {SCHEMA_VERSION}")
    out: dict[str, Any] = {"version": SCHEMA_VERSION, "title": _text(document, "title", "title")}
    for key in ("subtitle", "note"):
        if document.get(key) is not None:
            out[key] = _text(document, key, key)
    models = _list(document.get("models"), "models")
    _require(len(models) > 0, "models", "is empty, expected at least one model")
    out["models"] = [_model(model, f"models[{m}]") for m, model in enumerate(models)]
    _check_same_sources(out["models"])
    opens_on = document.get("opens_on", 0)
    _require(isinstance(opens_on, int) and not isinstance(opens_on, bool) and 0 <= opens_on < len(models), "opens_on",
             f"must be the index of a model, 0 to {len(models) - 1}, got {opens_on!r}")  # fmt: skip
    return _with_extras(out, document)


def _model(model: Any, where: str) -> dict[str, Any]:
    _require(isinstance(model, Mapping), where, "must be a mapping")
    out: dict[str, Any] = {"name": _text(model, "name", f"{where}.name")}
    metrics = model.get("metrics")
    if metrics is not None:
        _require(isinstance(metrics, Mapping), f"{where}.metrics", "must be a mapping of name to number")
        out["metrics"] = {str(k): _metric(v, f"{where}.metrics[{k!r}]") for k, v in metrics.items()}
    views = _list(model.get("views"), f"{where}.views")
    for v, view in enumerate(views):
        _require(isinstance(view, str) and view != "", f"{where}.views[{v}]", "must be a non-empty string")
    _require(len(set(views)) == len(views), f"{where}.views", f"has a repeated name: {views}")
    _require(not views or views[0] == "average", f"{where}.views", f"must start with 'average', got {views}")
    out["views"] = list(views)
    methods = _list(model.get("explanations", []), f"{where}.explanations")
    for k, method in enumerate(methods):
        _require(isinstance(method, str) and method != "", f"{where}.explanations[{k}]", "must be a non-empty string")
    _require(len(set(methods)) == len(methods), f"{where}.explanations", f"has a repeated name: {methods}")
    out["explanations"] = list(methods)
    examples = _list(model.get("examples"), f"{where}.examples")
    out["examples"] = [_example(ex, out["views"], f"{where}.examples[{e}]", out["explanations"]) for e, ex in enumerate(examples)]
    snapshots = model.get("snapshots")
    out["snapshots"] = None if snapshots is None else _snapshots(snapshots, f"{where}.snapshots")
    return _with_extras(out, model)


def _example(example: Any, views: list[str], where: str, methods: list[str]) -> dict[str, Any]:
    _require(isinstance(example, Mapping), where, "must be a mapping")
    source = _tokens(example.get("source_tokens"), f"{where}.source_tokens")
    output = _tokens(example.get("output_tokens"), f"{where}.output_tokens")
    target = example.get("target")
    _require(target is None or isinstance(target, str), f"{where}.target", f"must be a string or null, got {target!r}")
    correct = example.get("correct")
    _require(correct is None or isinstance(correct, bool), f"{where}.correct", f"must be true, false or null, got {correct!r}")
    weights = example.get("weights")
    _require(isinstance(weights, Mapping), f"{where}.weights", "must be a mapping of view name to matrix")
    _require(set(weights) == set(views), f"{where}.weights",
             f"has views {sorted(weights)}, expected the model's views {views}")  # fmt: skip
    out = {
        "source_tokens": source,
        "output_tokens": output,
        "target": target,
        "correct": correct,
        "gold": _gold(example.get("gold"), len(output), len(source), f"{where}.gold"),
        "weights": {view: _matrix(weights[view], len(output), len(source), f"{where}.weights[{view!r}]") for view in views},
    }
    explained = example.get("explained")
    if explained is not None:
        _require(isinstance(explained, Mapping), f"{where}.explained", "must be a mapping of method to matrix")
        _require(set(explained) <= set(methods), f"{where}.explained",
                 f"has methods {sorted(explained)}, expected some of the model's explanations {methods}")  # fmt: skip
        out["explained"] = {m: _matrix(explained[m], len(output), len(source), f"{where}.explained[{m!r}]") for m in explained}
    return _with_extras(out, example)


def _snapshots(snapshots: Any, where: str) -> dict[str, Any]:
    _require(isinstance(snapshots, Mapping), where, "must be a mapping or null")
    epochs = _list(snapshots.get("epochs"), f"{where}.epochs")
    _require(len(epochs) > 0, f"{where}.epochs", "is empty, expected at least one epoch")
    for i, epoch in enumerate(epochs):
        _require(isinstance(epoch, int) and not isinstance(epoch, bool), f"{where}.epochs[{i}]", f"must be an integer, got {epoch!r}")
    for key, kind in (("steps", int), ("labels", str)):
        if snapshots.get(key) is not None:
            given = _list(snapshots[key], f"{where}.{key}")
            _require(len(given) == len(epochs), f"{where}.{key}", f"has {len(given)} entries, expected {len(epochs)} (one per snapshot)")
            for i, value in enumerate(given):
                _require(
                    isinstance(value, kind) and not isinstance(value, bool),
                    f"{where}.{key}[{i}]",
                    f"must be a {kind.__name__}, got {value!r}",
                )
    examples = []
    for e, example in enumerate(_list(snapshots.get("examples"), f"{where}.examples")):
        here = f"{where}.examples[{e}]"
        _require(isinstance(example, Mapping), here, "must be a mapping")
        source = _tokens(example.get("source_tokens"), f"{here}.source_tokens")
        output = _tokens(example.get("output_tokens"), f"{here}.output_tokens")
        matrices = _list(example.get("weights"), f"{here}.weights")
        _require(len(matrices) == len(epochs), f"{here}.weights",
                 f"has {len(matrices)} matrices, expected {len(epochs)} (one per epoch)")  # fmt: skip
        item = {
            "source_tokens": source,
            "output_tokens": output,
            "gold": _gold(example.get("gold"), len(output), len(source), f"{here}.gold"),
            "weights": [_matrix(m, len(output), len(source), f"{here}.weights[{i}]") for i, m in enumerate(matrices)],
        }
        examples.append(_with_extras(item, example))
    return _with_extras({"epochs": list(epochs), "examples": examples}, snapshots)


def _with_extras(checked: dict[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``checked`` plus the fields of ``given`` it lacks: the schema allows optional additions."""
    checked.update({key: value for key, value in given.items() if key not in checked})
    return checked


def _check_same_sources(models: list[dict[str, Any]]) -> None:
    first = models[0]["examples"]
    for m, model in enumerate(models[1:], start=1):
        examples = model["examples"]
        _require(len(examples) == len(first), f"models[{m}].examples",
                 f"has {len(examples)} examples, expected {len(first)} as models[0] (a sweep page compares the same inputs)")  # fmt: skip
        for e, (ours, theirs) in enumerate(zip(examples, first)):
            _require(ours["source_tokens"] == theirs["source_tokens"], f"models[{m}].examples[{e}].source_tokens",
                     "differ from models[0]'s: every model needs the same sources in the same order")  # fmt: skip


def _matrix(value: Any, rows: int, cols: int, where: str) -> list[list[float | int]]:
    matrix = _list(value, where)
    _require(len(matrix) == rows, where, f"{len(matrix)} rows, expected {rows} (one per output token)")
    out = []
    for r, row in enumerate(matrix):
        row = _list(row, f"{where}[{r}]")
        _require(len(row) == cols, f"{where}[{r}]", f"{len(row)} weights, expected {cols} (one per source token)")
        out.append([_weight(w, f"{where}[{r}][{c}]") for c, w in enumerate(row)])
    return out


def _weight(value: Any, where: str) -> float | int:
    number = _number(value, where)
    _require(math.isfinite(number), where, f"is {number}, expected a finite number")
    _require(-WEIGHT_SLACK <= number <= 1 + WEIGHT_SLACK, where, f"is {number}, expected a weight in [0, 1]")
    rounded = round(min(max(number, 0.0), 1.0), WEIGHT_DECIMALS)
    return int(rounded) if rounded in (0.0, 1.0) else rounded


def _gold(value: Any, rows: int, cols: int, where: str) -> list[list[int]] | None:
    if value is None:
        return None
    gold = _list(value, where)
    _require(len(gold) <= rows, where, f"has {len(gold)} steps, expected at most {rows} (one per output token)")
    out = []
    for r, positions in enumerate(gold):
        positions = _list(positions, f"{where}[{r}]")
        for c, position in enumerate(positions):
            _require(isinstance(position, int) and not isinstance(position, bool) and 0 <= position < cols,
                     f"{where}[{r}][{c}]", f"is {position!r}, expected a source position in [0, {cols})")  # fmt: skip
        out.append([int(p) for p in positions])
    return out


def _tokens(value: Any, where: str) -> list[str]:
    tokens = _list(value, where)
    for i, token in enumerate(tokens):
        _require(isinstance(token, str), f"{where}[{i}]", f"must be a string, got {token!r}")
    return list(tokens)


def _list(value: Any, where: str) -> list[Any]:
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # an array from the data builder: plain lists of Python numbers
    _require(isinstance(value, Sequence) and not isinstance(value, (str, bytes)), where,
             f"must be a list, got {type(value).__name__}")  # fmt: skip
    return list(value)


def _metric(value: Any, where: str) -> float | None:
    """A metric's value; NaN (a measure that does not apply, e.g. alignment without attention) is
    null (as is None), which JSON can hold and the page shows as n/a."""
    if value is None:
        return None
    number = _number(value, where)
    return number if math.isfinite(number) else None


def _number(value: Any, where: str) -> float:
    if hasattr(value, "item") and not isinstance(value, (int, float)):
        value = value.item()  # a numpy or torch scalar
    _require(isinstance(value, (int, float)) and not isinstance(value, bool), where, f"must be a number, got {value!r}")
    return float(value)


def _text(mapping: Mapping[str, Any], key: str, where: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str):
        raise _invalid(where, f"must be a string, got {value!r}")
    return value


def _require(condition: bool, where: str, problem: str) -> None:
    if not condition:
        raise _invalid(where, problem)


def _invalid(where: str, problem: str) -> ValueError:
    return ValueError(f"explorer document: {where}: {problem}")
