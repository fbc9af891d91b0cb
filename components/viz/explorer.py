"""The attention explorer: one self-contained HTML page from one JSON-able document.

:func:`explorer_html` checks a *document* (a plain dict, schema version 1: see
:mod:`attnlab.viz.explorer_document`), rounds its weights to
:data:`~attnlab.viz.explorer_document.WEIGHT_DECIMALS` decimals and embeds it as JSON in
``<script type="application/json" id="explorer-data">``; the page's inline
script (``explorer_assets/explorer.js``) and style (``explorer_assets/explorer.css``) draw it. The
page fetches nothing and stores nothing, so it opens as a local file and inside the MLflow UI's
artifact viewer (an iframe). It carries the glyphs of the non-ASCII characters its document
shows (:func:`document_characters`) as an inline font (:mod:`attnlab.viz.fonts`), so 年月日 render on a
machine without a CJK system font. :func:`write_explorer` writes it to a file.
"""

from __future__ import annotations

import functools
import html
import json
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from attnlab.viz.explorer_document import compact_document
from attnlab.viz.fonts import bundled_cjk_font, embedded_characters, font_face_css, subset_font

__all__ = [
    "document_characters",
    "embed_json",
    "embedded_font_css",
    "explorer_html",
    "write_explorer",
]

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
        texts += [model["name"], *model["views"], *model.get("explanations", []), *model.get("metrics", {})]
        snapshots = model["snapshots"] or {"examples": []}
        texts += snapshots.get("labels") or []
        for example in model["examples"] + snapshots["examples"]:
            texts += [*example["source_tokens"], *example["output_tokens"], example.get("target") or ""]
    return "".join(sorted(set("".join(texts))))


@functools.lru_cache(maxsize=64)
def embedded_font_css(characters: str) -> str:
    """The ``@font-face`` of the bundled CJK font's glyphs for the non-ASCII ``characters`` (see
    :mod:`attnlab.viz.fonts`); empty when there are none. Kept per character set for the process:
    subsetting the 6 MB font takes 0.1-0.3 CPU-s, and the runs of a sweep's worker, a tune's
    trials and a served model's pages mostly show the same characters."""
    needed = embedded_characters(characters)
    if not needed:
        return ""
    return font_face_css(subset_font(bundled_cjk_font().read_bytes(), needed))


def embed_json(data: Any) -> str:
    """``data`` as compact JSON that is safe inside a ``<script>`` element: ``</`` becomes
    ``<\\/`` (no ``</script>`` can end the element early) and ``<!--`` becomes ``<\\u0021--``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\u0021--")


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
    <label id="explain-control" hidden>explain by <select id="explain-select" data-testid="explain-select"></select></label>
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
    <h2 id="detail-heading" data-testid="detail-heading">Attention</h2>
    <dl id="detail-info" class="info"></dl>
    <p class="hint">Hover or focus a character: an output character shades the source by its weights
      (darkest = most attended, marked with a dot), a source character shades the outputs that read it.
      A gradient attribution (explain by) shades each source character by its share of the output
      character's absolute attribution.</p>
    <div class="tokens">
      <span class="row-label" id="source-label">source</span>
      <div id="source-row" class="token-row" role="group" aria-labelledby="source-label"></div>
      <span class="row-label" id="output-label">output</span>
      <div id="output-row" class="token-row" role="group" aria-labelledby="output-label"></div>
    </div>
    <p id="hover-info" class="hover-info" aria-live="polite"></p>
    <div id="grid-wrap" class="grid-wrap"></div>
    <div class="legend" aria-label="legend">
      <span><span class="swatch ramp"></span> <span id="legend-ramp">weight 0 to 1</span></span>
      <span><span class="swatch gold-swatch"></span> gold link (a dashed outline on a character)</span>
      <span><span class="swatch argmax-swatch"></span> <span id="legend-top">most attended (argmax of the row)</span></span>
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
