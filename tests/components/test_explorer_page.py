"""The attention explorer's page builder (attnlab.viz.explorer): checks, escaping, rounding, size.
Its behaviour in a browser: tests/flows/test_explorer_browser.py."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from explorer_documents import date_document

from attnlab.viz.explorer import document_characters, embed_json, explorer_html, write_explorer
from attnlab.viz.explorer_document import WEIGHT_DECIMALS, compact_document

DATA = re.compile(r'<script type="application/json" id="explorer-data">(.*?)</script>', re.S)


def embedded(page: str) -> dict:
    """The document a page carries, as its script reads it."""
    (text,) = DATA.findall(page)
    return json.loads(text)


@pytest.fixture
def document() -> dict:
    return date_document(examples=3, heads=2, probes=1, epochs=2)


def test_page_carries_the_document_with_weights_rounded(document):
    page = explorer_html(document)
    data = embedded(page)
    assert data["title"] == document["title"] and data["note"] == document["note"]
    ours, theirs = data["models"][0]["examples"][1], document["models"][0]["examples"][1]
    assert ours["source_tokens"] == theirs["source_tokens"] and ours["gold"] == theirs["gold"]
    for view in document["models"][0]["views"]:
        for row, exact in zip(ours["weights"][view], theirs["weights"][view]):
            assert row == pytest.approx(exact, abs=0.5 * 10**-WEIGHT_DECIMALS + 1e-12)
    probe = data["models"][0]["snapshots"]["examples"][0]["weights"]
    assert len(probe) == 2 and probe[0] != probe[1]
    assert page.startswith("<!DOCTYPE html>") and '<meta charset="utf-8">' in page


def test_rounding_keeps_three_decimals_and_writes_0_and_1_as_integers(document):
    weights = document["models"][0]["examples"][0]["weights"]["average"]
    weights[0][:4] = [0.12345, 0.99996, 0.00004, 1.00004]  # the last: float slack above 1
    weights[1][:2] = [0.0, 1.0]
    rows = compact_document(document)["models"][0]["examples"][0]["weights"]["average"]
    assert rows[0][:4] == [0.123, 1, 0, 1]
    assert rows[1][:2] == [0, 1] and all(type(w) is int for w in rows[1][:2])
    assert "0.12345" not in explorer_html(document) and "[0.123,1,0,1," in explorer_html(document)


def test_the_document_given_is_not_changed(document):
    before = copy.deepcopy(document)
    explorer_html(document)
    assert document == before


def test_script_end_tags_in_the_data_cannot_close_the_script(document):
    nasty = "</script><script>alert(1)</script><!--"
    document["title"] = nasty
    document["models"][0]["examples"][0]["source_tokens"][0] = nasty
    page = explorer_html(document)
    # Two script elements (data, code) and no "</script>" from the data.
    assert page.count("</script>") == 2
    assert "<!--" not in page
    data = embedded(page)
    assert data["title"] == nasty and data["models"][0]["examples"][0]["source_tokens"][0] == nasty
    assert f"<title>{nasty}</title>" not in page and "<title>&lt;/script&gt;" in page


def test_embed_json_escapes_only_what_html_would_read():
    assert embed_json({"a": "</b>"}) == '{"a":"<\\/b>"}'
    assert json.loads(embed_json(["<!-- x", "年"])) == ["<!-- x", "年"]
    assert "年" in embed_json(["年"])  # UTF-8, not \\u escapes: 3 bytes, not 6


def test_page_fetches_nothing_and_never_navigates_the_frame(document):
    page = explorer_html(document)
    assert page.count("url(data:font/woff;base64,") == 1  # the embedded font, inline
    page = page.replace("url(data:font/woff;base64,", "")
    for needle in ("http://", "https://", "src=", "fetch(", "XMLHttpRequest", "localStorage", "sessionStorage",
                   "window.top", "window.parent", "location", "import(", "@import", "url("):  # fmt: skip
        assert needle not in page, needle


def test_write_explorer_creates_folders_and_writes_utf8(tmp_path: Path, document):
    path = write_explorer(document, tmp_path / "attention" / "explorer.html")
    assert path == tmp_path / "attention" / "explorer.html"
    assert embedded(path.read_text(encoding="utf-8"))["models"][0]["examples"][0]["output_tokens"][4] == "年"


def test_a_default_sized_run_page_stays_under_1_mb():
    page = explorer_html(date_document())
    size = len(page.encode("utf-8"))
    print(f"explorer page of 200 examples x 5 views of 12x10 weights + 3 probes x 10 epochs: {size / 1e6:.3f} MB")
    assert size < 1_000_000


def test_a_model_without_attention_has_no_views(document):
    model = document["models"][0]
    model["views"] = []
    for example in model["examples"]:
        example["weights"] = {}
    assert embedded(explorer_html(document))["models"][0]["views"] == []


def test_a_metric_that_does_not_apply_is_null(document):
    document["models"][0]["metrics"] = {"exact_match": 0.5, "alignment_accuracy": float("nan"), "erasure_flip_top": None}
    metrics = embedded(explorer_html(document))["models"][0]["metrics"]
    assert metrics == {"exact_match": 0.5, "alignment_accuracy": None, "erasure_flip_top": None}


def test_optional_fields_may_be_added_and_are_kept(document):
    document["run_id"] = "abc"
    document["models"][0]["run_id"] = "def"
    document["models"][0]["examples"][0]["probability"] = 0.5
    data = embedded(explorer_html(document))
    assert data["run_id"] == "abc" and data["models"][0]["run_id"] == "def"
    assert data["models"][0]["examples"][0]["probability"] == 0.5


def test_numpy_arrays_and_scalars_are_accepted(document):
    np = pytest.importorskip("numpy")
    example = document["models"][0]["examples"][0]
    example["weights"] = {view: np.asarray(m, dtype=np.float32) for view, m in example["weights"].items()}
    document["models"][0]["metrics"]["exact_match"] = np.float64(0.5)
    data = embedded(explorer_html(document))
    assert data["models"][0]["metrics"]["exact_match"] == 0.5
    assert len(data["models"][0]["examples"][0]["weights"]["head 2"]) == 12


def test_a_sweep_page_needs_the_same_sources_in_every_model(document):
    second = copy.deepcopy(document["models"][0])
    second["name"] = "additive"
    document["models"].append(second)
    assert len(embedded(explorer_html(document))["models"]) == 2
    second["examples"][2]["source_tokens"] = list("01-01-2000")
    with pytest.raises(ValueError, match=re.escape("models[1].examples[2].source_tokens: differ from models[0]'s")):
        explorer_html(document)
    second["examples"].pop()
    with pytest.raises(ValueError, match=re.escape("models[1].examples: has 2 examples, expected 3")):
        explorer_html(document)


def _set(path: str, value):
    """A change to the fixture document: dotted path of keys / indexes, the new value."""

    def change(document: dict) -> None:
        *parents, last = [int(k) if k.lstrip("-").isdigit() else k for k in path.split(".")]
        target = document
        for key in parents:
            target = target[key]
        if value is _DELETE:
            del target[last]
        else:
            target[last] = value(target[last]) if callable(value) else value

    return change


_DELETE = object()
EX = "models.0.examples.1"


@pytest.mark.parametrize(
    "change, message",
    [
        (_set("version", 2), "version: is 2, expected 1"),
        (_set("title", None), "title: must be a string"),
        (_set("models", []), "models: is empty"),
        (_set("models.0.views", ["head 1", "average", "head 2"]), "models[0].views: must start with 'average'"),
        (_set("models.0.views", ["average", "head 1", "head 1"]), "models[0].views: has a repeated name"),
        (_set(f"{EX}.weights.head 1", lambda m: m[:9]), "models[0].examples[1].weights['head 1']: 9 rows, expected 12 (one per output token)"),
        (_set(f"{EX}.weights.average.3", lambda row: row[:-1]), "models[0].examples[1].weights['average'][3]: 9 weights, expected 10 (one per source token)"),
        (_set(f"{EX}.weights.head 2", _DELETE), "models[0].examples[1].weights: has views ['average', 'head 1'], expected the model's views"),
        (_set(f"{EX}.weights.average.0.2", 1.5), "models[0].examples[1].weights['average'][0][2]: is 1.5, expected a weight in [0, 1]"),
        (_set(f"{EX}.weights.average.0.2", float("nan")), "models[0].examples[1].weights['average'][0][2]: is nan, expected a finite number"),
        (_set(f"{EX}.weights.average.0.2", "0.5"), "models[0].examples[1].weights['average'][0][2]: must be a number"),
        (_set(f"{EX}.source_tokens", "25-12-2023"), "models[0].examples[1].source_tokens: must be a list, got str"),
        (_set(f"{EX}.output_tokens.2", 7), "models[0].examples[1].output_tokens[2]: must be a string"),
        (_set(f"{EX}.correct", "yes"), "models[0].examples[1].correct: must be true, false or null"),
        (_set(f"{EX}.target", 3), "models[0].examples[1].target: must be a string or null"),
        (_set(f"{EX}.gold.0", [10]), "models[0].examples[1].gold[0][0]: is 10, expected a source position in [0, 10)"),
        (_set(f"{EX}.gold", lambda g: g + [[1], [1]]), "models[0].examples[1].gold: has 13 steps, expected at most 12"),
        (_set("models.0.snapshots.epochs", []), "models[0].snapshots.epochs: is empty"),
        (_set("models.0.snapshots.epochs", [1, 2.5]), "models[0].snapshots.epochs[1]: must be an integer"),
        (_set("models.0.snapshots.examples.0.weights", lambda w: w[:1]), "models[0].snapshots.examples[0].weights: has 1 matrices, expected 2 (one per epoch)"),
        (_set("models.0.snapshots.examples.0.weights.1", lambda m: [row[:3] for row in m]), "models[0].snapshots.examples[0].weights[1][0]: 3 weights, expected 10"),
        (_set("models.0.metrics", {"exact_match": "high"}), "models[0].metrics['exact_match']: must be a number"),
        (_set("models.0.explanations", ["saliency", "saliency"]), "models[0].explanations: has a repeated name"),
        (_set(f"{EX}.explained", {"lime": [[0.1] * 10] * 12}), "models[0].examples[1].explained: has methods ['lime'], expected some of the model's explanations ['saliency']"),
        (_set(f"{EX}.explained.saliency.0.1", 1.5), "models[0].examples[1].explained['saliency'][0][1]: is 1.5, expected a weight in [0, 1]"),
        (_set(f"{EX}.explained.saliency", lambda m: m[:3]), "models[0].examples[1].explained['saliency']: 3 rows, expected 12"),
    ],
)  # fmt: skip
def test_a_bad_document_is_refused_naming_the_field(document, change, message):
    document["models"][0]["explanations"] = ["saliency"]
    document["models"][0]["examples"][1]["explained"] = {"saliency": [[0.1] * 10 for _ in range(12)]}
    explorer_html(document)  # valid before the change
    change(document)
    with pytest.raises(ValueError, match=re.escape(f"explorer document: {message}")):
        explorer_html(document)


def test_the_module_imports_no_torch():
    code = "import sys, attnlab.viz.explorer; print(sorted(m for m in ('torch', 'numpy', 'mlflow', 'prefect') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


FONT = re.compile(r'@font-face \{ font-family: "attnlab glyphs"; src: url\(data:font/woff;base64,([A-Za-z0-9+/=]+)\)')


def embedded_glyphs(page: str) -> set[str]:
    """The characters of the font a page embeds (empty: it embeds none)."""
    import base64
    import io

    from fontTools.ttLib import TTFont

    fonts = FONT.findall(page)
    assert len(fonts) <= 1
    return {chr(c) for c in TTFont(io.BytesIO(base64.b64decode(fonts[0]))).getBestCmap()} if fonts else set()


def test_the_page_embeds_the_glyphs_of_every_non_ascii_character_its_document_shows(document):
    example = document["models"][0]["examples"][0]
    example["source_tokens"][0] = "二"  # a source token
    example["target"] = "2023年12月25日火"  # a target only
    document["models"][0]["snapshots"]["examples"][0]["output_tokens"][0] = "水"  # a snapshot probe only
    document["models"][0]["name"] = "注意"  # a model name
    document["title"] = "attnlab run é"
    characters = document_characters(compact_document(document))
    assert {"二", "火", "水", "注", "意", "é", "年", "月", "日", "<"} <= set(characters)
    assert embedded_glyphs(explorer_html(document)) == {"二", "火", "水", "注", "意", "é", "年", "月", "日"}


def test_a_page_of_ascii_only_embeds_no_font(document):
    for example in document["models"][0]["examples"]:
        example["output_tokens"] = [t for t in example["output_tokens"] if t.isascii()]
        example["target"] = None
        example["gold"] = None
        example["weights"] = {v: m[: len(example["output_tokens"])] for v, m in example["weights"].items()}
    document["models"][0]["snapshots"] = None
    page = explorer_html(document)
    assert "@font-face" not in page and embedded_glyphs(page) == set()


def test_the_embedded_font_adds_a_few_kilobytes_to_a_date_page():
    document = date_document(examples=200)
    page = explorer_html(document)
    (font,) = FONT.findall(page)
    added = len(re.search(r"@font-face \{.*?\}\n", page).group(0).encode())
    print(f"embedded font of a date page (年月日): {added} bytes of {len(page.encode())}")
    assert embedded_glyphs(page) == {"年", "月", "日"} and added < 4000


def test_the_font_of_a_character_set_is_subset_once_a_process(monkeypatch):
    """Every run of a sweep's worker draws a page of the same characters: the 6 MB font is subset
    for the first only, and a page of other characters gets its own glyphs."""
    from attnlab.viz import explorer

    calls: list[str] = []
    real = explorer.subset_font
    monkeypatch.setattr(explorer, "subset_font", lambda font, characters: calls.append(characters) or real(font, characters))
    explorer.embedded_font_css.cache_clear()
    first = explorer.embedded_font_css("2023年12月25日")
    assert explorer.embedded_font_css("2023年12月25日") == first and calls == ["年日月"]  # sorted by code point
    assert explorer.embedded_font_css("本日") != first and calls == ["年日月", "日本"]
    explorer.embedded_font_css.cache_clear()
