"""The attention explorer: one self-contained HTML page from one JSON-able document.

:func:`explorer_html` checks a *document* (a plain dict, schema version 1, below), rounds its
weights to :data:`WEIGHT_DECIMALS` decimals and embeds it as JSON in
``<script type="application/json" id="explorer-data">``; the page's inline script
(``explorer_assets/explorer.js``) and style (``explorer_assets/explorer.css``) draw it. The page
fetches nothing and stores nothing, so it opens as a local file and inside the MLflow UI's
artifact viewer (an iframe). It carries the glyphs of the non-ASCII characters its document
shows (:func:`document_characters`) as an inline font (:mod:`attnlab.viz.fonts`), so 年月日 render on a
machine without a CJK system font. :func:`write_explorer` writes it to a file.

Document (``Lt`` output tokens, ``Ls`` source tokens of one example)::

    {"version": 1, "title": str, "subtitle": str (optional), "note": str (optional),
     "opens_on": int (optional; the index of the model the page shows first, default 0),
     "models": [                                   # one per trained model, at least one
       {"name": str, "metrics": {str: number} (optional),
        "views": ["average", "head 1", ...],       # "average" first; [] when the model has no attention
        "examples": [                              # in display order (wrong ones first)
          {"source_tokens": [str] * Ls, "output_tokens": [str] * Lt,
           "target": str | None, "correct": bool | None,
           "gold": [[int source position, ...] per output step (at most Lt lists)] | None,
           "weights": {view: [Lt rows of Ls weights in [0, 1]] for every view}}],
        "snapshots": None | {"epochs": [int] * E,     # the epoch of each snapshot (0: untrained)
                             "steps": [int] * E (optional),   # the optimisation step of each
                             "labels": [str] * E (optional),  # the slider's name of each
                             "examples": [{"source_tokens": ..., "output_tokens": ..., "gold": ...,
                                           "weights": [E matrices [Lt, Ls], one per snapshot]}]}}]}

With several models (a sweep's page) every model has the same example sources in the same
order, so the page compares them on one input.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from attnlab.viz.fonts import bundled_cjk_font, embedded_characters, font_face_css, subset_font

SCHEMA_VERSION = 1
#: Decimals kept of each attention weight in the page (0.001 is below what a colour shows).
WEIGHT_DECIMALS = 3
#: Slack allowed on a weight outside [0, 1] (float rounding of a softmax).
WEIGHT_SLACK = 1e-4

_ASSETS = "explorer_assets"


def explorer_html(document: Mapping[str, Any]) -> str:
    """The explorer page of ``document`` (schema above) as one HTML string.

    Raises ValueError naming the bad field, e.g. ``models[0].examples[3].weights['head 1']: 9 rows,
    expected 12 (one per output token)``.
    """
    compact = compact_document(document)
    title = html.escape(compact["title"])
    return _PAGE.format(
        title=title,
        font=embedded_font_css(document_characters(compact)),
        css=_asset("explorer.css"),
        data=embed_json(compact),
        js=_asset("explorer.js"),
    )


def write_explorer(document: Mapping[str, Any], path: str | Path) -> Path:
    """Write :func:`explorer_html` of ``document`` to ``path`` (UTF-8; parent folders created)."""
    page = explorer_html(document)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def document_characters(compact: Mapping[str, Any]) -> str:
    """Every character the page shows from a checked document (:func:`compact_document`), sorted
    once each: title, subtitle, note, model, view and metric names, snapshot labels, and every
    token and target of every example and snapshot."""
    texts = [compact["title"], compact.get("subtitle") or "", compact.get("note") or ""]
    for model in compact["models"]:
        texts += [model["name"], *model["views"], *model.get("metrics", {})]
        snapshots = model["snapshots"] or {"examples": []}
        texts += snapshots.get("labels") or []
        for example in model["examples"] + snapshots["examples"]:
            texts += [*example["source_tokens"], *example["output_tokens"], example.get("target") or ""]
    return "".join(sorted(set("".join(texts))))


def embedded_font_css(characters: str) -> str:
    """The ``@font-face`` of the bundled CJK font's glyphs for the non-ASCII ``characters`` (see
    :mod:`attnlab.viz.fonts`); empty when there are none."""
    needed = embedded_characters(characters)
    if not needed:
        return ""
    return font_face_css(subset_font(bundled_cjk_font().read_bytes(), needed))


def embed_json(data: Any) -> str:
    """``data`` as compact JSON that is safe inside a ``<script>`` element: ``</`` becomes
    ``<\\/`` (no ``</script>`` can end the element early) and ``<!--`` becomes ``<\\u0021--``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


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
        _require(isinstance(view, str) and view, f"{where}.views[{v}]", "must be a non-empty string")
    _require(len(set(views)) == len(views), f"{where}.views", f"has a repeated name: {views}")
    _require(not views or views[0] == "average", f"{where}.views", f"must start with 'average', got {views}")
    out["views"] = list(views)
    examples = _list(model.get("examples"), f"{where}.examples")
    out["examples"] = [_example(ex, out["views"], f"{where}.examples[{e}]") for e, ex in enumerate(examples)]
    snapshots = model.get("snapshots")
    out["snapshots"] = None if snapshots is None else _snapshots(snapshots, f"{where}.snapshots")
    return _with_extras(out, model)


def _example(example: Any, views: list[str], where: str) -> dict[str, Any]:
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
                _require(isinstance(value, kind) and not isinstance(value, bool), f"{where}.{key}[{i}]", f"must be a {kind.__name__}, got {value!r}")
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
    _require(isinstance(value, str), where, f"must be a string, got {value!r}")
    return value


def _require(condition: bool, where: str, problem: str) -> None:
    if not condition:
        raise ValueError(f"explorer document: {where}: {problem}")


def _asset(name: str) -> str:
    return resources.files("attnlab.viz").joinpath(_ASSETS, name).read_text(encoding="utf-8")


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
{font}{css}</style>
</head>
<body>
<header>
  <h1>{title}</h1>
  <p id="subtitle" class="subtitle"></p>
  <div class="controls">
    <label id="model-control" hidden>model <select id="model-select" data-testid="model-select"></select></label>
    <span id="model-metrics" class="metrics" data-testid="model-metrics"></span>
    <label id="view-control" hidden>view <select id="view-select" data-testid="view-select"></select></label>
  </div>
</header>
<main>
  <section id="examples" aria-labelledby="examples-heading">
    <h2 id="examples-heading">Examples</h2>
    <p id="note" class="note"></p>
    <div class="filters">
      <label>search <input type="search" id="search" data-testid="search" placeholder="source, output, target" autocomplete="off"></label>
      <label class="check"><input type="checkbox" id="wrong-only" data-testid="wrong-only"> wrong only</label>
    </div>
    <p id="list-count" class="count" aria-live="polite"></p>
    <ul id="example-list" data-testid="example-list" role="listbox" aria-labelledby="examples-heading"></ul>
  </section>
  <section id="detail" aria-labelledby="detail-heading">
    <h2 id="detail-heading">Attention</h2>
    <dl id="detail-info" class="info"></dl>
    <p class="hint">Hover or focus a character: an output character shades the source by its weights
      (darkest = most attended, marked with a dot), a source character shades the outputs that read it.</p>
    <div class="tokens">
      <span class="row-label" id="source-label">source</span>
      <div id="source-row" class="token-row" role="group" aria-labelledby="source-label"></div>
      <span class="row-label" id="output-label">output</span>
      <div id="output-row" class="token-row" role="group" aria-labelledby="output-label"></div>
    </div>
    <p id="hover-info" class="hover-info" aria-live="polite"></p>
    <div id="grid-wrap" class="grid-wrap"></div>
    <div class="legend" aria-label="legend">
      <span><span class="swatch ramp"></span> weight 0 to 1</span>
      <span><span class="swatch gold-swatch"></span> gold link (a dashed outline on a character)</span>
      <span><span class="swatch argmax-swatch"></span> most attended (argmax of the row)</span>
      <span><span class="mark wrong-mark">&#x2717;</span> wrong output</span>
    </div>
    <div id="compare"></div>
  </section>
  <section id="snapshots" hidden aria-labelledby="snapshots-heading">
    <h2 id="snapshots-heading">Attention across training</h2>
    <p class="hint">The same probe example as training goes (before it, at steps inside the first
      epoch, after every epoch), teacher-forced on its target: move the slider to watch the
      alignment form.</p>
    <div class="controls">
      <label>probe <select id="probe-select" data-testid="probe-select"></select></label>
      <label>training <input type="range" id="epoch-slider" data-testid="epoch-slider" min="0" max="0" step="1" value="0"></label>
      <output id="epoch-label" for="epoch-slider" data-testid="epoch-label"></output>
      <button type="button" id="play">play</button>
    </div>
    <p id="snapshot-info" class="hover-info" data-testid="snapshot-info"></p>
    <div id="snapshot-grid" class="grid-wrap"></div>
  </section>
</main>
<noscript><p>This page needs JavaScript to draw the attention weights.</p></noscript>
<script type="application/json" id="explorer-data">{data}</script>
<script>
{js}</script>
</body>
</html>
"""
