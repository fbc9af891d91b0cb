"""The attention explorer page in a real headless Chromium (Debian's `chromium`, driven by
Playwright's Python package; never a downloaded browser).

The page is written by attnlab.viz.explorer.write_explorer from a hand-made document (three models:
two heads and their average, one view, no attention; four examples, the wrong one first;
snapshots over three epochs with different weights) and opened as a file:// URL. Every expected
number comes from that document. Skipped when chromium or playwright is missing, except under
CI (env CI set), where that is a failure: CI installs both (make setup).
"""

from __future__ import annotations

import json
import random

import pytest
from explorer_documents import date_document

from attnlab.viz.explorer import explorer_html, write_explorer

# The last source is long: at 200% zoom its tokens must wrap and its grid scroll.
SOURCES = ["25-12-2023", "01/02/1999", "7 Mar 2010", "2000.11.30", "Saturday, the fourth of July, 1987"]
OUTPUTS = ["2023年12月52日", "1999年2月1日", "2010年3月7日", "2000年11月30日", "1987年7月4日"]
TARGETS = ["2023年12月25日", "1999年2月1日", "2010年3月7日", "2000年11月30日", "1987年7月4日"]
LONG = 4


def weights(rng: random.Random, rows: int, cols: int) -> list[list[float]]:
    """[rows, cols] rows of 3-decimal weights summing to about 1, each with one clear maximum
    placed at a random column (so no two views or epochs share their argmaxes by design)."""
    matrix = []
    for _ in range(rows):
        row = [round(rng.uniform(0.0, 0.08), 3) for _ in range(cols)]
        row[rng.randrange(cols)] = round(rng.uniform(0.3, 0.7), 3)
        matrix.append(row)
    return matrix


def document() -> dict:
    rng = random.Random(7)

    def examples(views: list[str], outputs: list[str], correct: list[bool]) -> list[dict]:
        out = []
        for source, output, target, right in zip(SOURCES, outputs, TARGETS, correct):
            s, o = list(source), list(output) + ["<eos>"]
            gold = [[min(i, len(s) - 1)] if ch.isdigit() else [] for i, ch in enumerate(output)]
            out.append({"source_tokens": s, "output_tokens": o, "target": target, "correct": right, "gold": gold,
                        "weights": {v: weights(rng, len(o), len(s)) for v in views}})  # fmt: skip
        return out

    def snapshots(epochs: int) -> dict:
        probes = []
        for source, target in zip(SOURCES[1:3], TARGETS[1:3]):
            s, o = list(source), list(target) + ["<eos>"]
            gold = [[min(i, len(s) - 1)] if ch.isdigit() else [] for i, ch in enumerate(target)]
            probes.append({"source_tokens": s, "output_tokens": o, "gold": gold,
                           "weights": [weights(rng, len(o), len(s)) for _ in range(epochs)]})  # fmt: skip
        return {"epochs": list(range(1, epochs + 1)), "examples": probes}

    heads = ["average", "head 1", "head 2"]
    wrong_first = [False] + [True] * 4
    return {
        "version": 1,
        "title": "attnlab sweep browser-test",
        "subtitle": "date task, three scorers",
        "note": "5 test examples: every wrong one, then right ones",
        "models": [
            {"name": "multihead", "metrics": {"exact_match": 0.75}, "views": heads,
             "examples": examples(heads, OUTPUTS, wrong_first), "snapshots": snapshots(3)},
            {"name": "additive", "metrics": {"exact_match": 1.0}, "views": ["average"],
             "examples": examples(["average"], TARGETS, [True] * 5), "snapshots": snapshots(3)},
            {"name": "none", "metrics": {"exact_match": 0.5}, "views": [],
             "examples": examples([], OUTPUTS[:2] + TARGETS[2:], [False] + [True] * 4), "snapshots": None},
        ],
    }  # fmt: skip


#: The gradient methods the first model's first examples are explained by (not the others).
METHODS, EXPLAINED = ["saliency", "integrated_gradients"], 3


def explained(document: dict) -> dict:
    """``document`` with the first model's first :data:`EXPLAINED` examples explained by each of
    :data:`METHODS` (matrices of their own seed: the other models' weights stay as they were)."""
    rng = random.Random(11)
    first = document["models"][0]
    first["explanations"] = METHODS
    for example in first["examples"][:EXPLAINED]:
        shape = len(example["output_tokens"]), len(example["source_tokens"])
        example["explained"] = {method: weights(rng, *shape) for method in METHODS}
    return document


DOCUMENT = explained(document())


@pytest.fixture(scope="module")
def url(tmp_path_factory) -> str:
    return write_explorer(DOCUMENT, tmp_path_factory.mktemp("explorer") / "explorer.html").as_uri()


@pytest.fixture
def page(browser, url):
    """The page opened at 1280x900 and drawn; fails the test on any console error, page error or
    request that leaves the file."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: problems.append(f"request: {r.url}") if not r.url.startswith("file:") else None)
    page.goto(url)
    page.wait_for_selector("body[data-ready]")
    yield page
    context.close()
    assert problems == []


def alpha(page, selector: str) -> list[float | None]:
    """Inline background alpha of every element matching ``selector`` (None: no inline colour)."""
    return page.eval_on_selector_all(
        selector,
        """nodes => nodes.map(n => {
        const c = n.style.backgroundColor;
        if (!c) return null;
        const parts = c.match(/[\\d.]+/g).map(Number);
        return parts.length === 4 ? parts[3] : 1;
    })""",
    )


def indexes(page, selector: str) -> list[int]:
    return page.eval_on_selector_all(selector, "nodes => nodes.map(n => Number(n.dataset.index))")


def cells(page, testid: str) -> list[list[float]]:
    """The [Lt, Ls] matrix a grid shows, from its cells' data-row/data-col/data-weight."""
    found = page.eval_on_selector_all(f'[data-testid="{testid}"]', "ns => ns.map(n => [+n.dataset.row, +n.dataset.col, +n.dataset.weight])")
    rows = max(r for r, _, _ in found) + 1
    cols = max(c for _, c, _ in found) + 1
    matrix = [[None] * cols for _ in range(rows)]
    for r, c, w in found:
        matrix[r][c] = w
    return matrix


def argmax(values: list[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def test_page_loads_without_errors_and_reports_its_load_time(page):
    timing = page.evaluate("""() => {
        const nav = performance.getEntriesByType('navigation')[0];
        return {load: nav.loadEventEnd, render: window.explorerRenderMs};
    }""")
    print(f"explorer page (hand-made, 3 models x 5 examples): loaded in {timing['load']:.0f} ms, drawn in {timing['render']:.0f} ms")
    assert page.title() == DOCUMENT["title"]
    assert page.locator('[data-testid="example-item"]').count() == 5


def test_a_default_sized_page_loads(browser, tmp_path):
    """The page of a default-sized run (200 examples, 5 views, 3 probes x 10 epochs): load time
    printed, not asserted (the machine is shared); checked: it draws without errors."""
    path = write_explorer(date_document(), tmp_path / "explorer.html")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]")
    timing = page.evaluate("({load: performance.getEntriesByType('navigation')[0].loadEventEnd, render: window.explorerRenderMs})")
    size = path.stat().st_size
    print(
        f"explorer page of a default-sized run ({size / 1e6:.2f} MB): loaded in {timing['load']:.0f} ms, drawn in {timing['render']:.0f} ms"
    )
    assert page.locator('[data-testid="example-item"]').count() == 200
    page.close()
    assert errors == []


def reversal_document(length: int = 40) -> dict:
    """Two digit strings reversed, one of ``length`` characters (a bottleneck-study source: no
    space to break at), the short one wrong."""
    rng = random.Random(3)
    examples = []
    for source, correct in (("".join(str(rng.randrange(10)) for _ in range(length)), True), ("0123456789", False)):
        target = source[::-1]
        output = list(target if correct else "9" + target[1:]) + ["<eos>"]
        examples.append({"source_tokens": list(source), "output_tokens": output, "target": target, "correct": correct,
                         "gold": [[len(source) - 1 - i] for i in range(len(source))] + [[]],
                         "weights": {"average": weights(rng, len(output), len(source))}})  # fmt: skip
    return {
        "version": 1,
        "title": "attnlab run reverse",
        "subtitle": "reverse task",
        "note": "2 test examples",
        "models": [{"name": "additive", "metrics": {"exact_match": 0.5}, "views": ["average"], "examples": examples}],
    }


@pytest.mark.parametrize("viewport", [(1280, 900), (640, 450)])
def test_a_long_source_without_spaces_stays_inside_the_example_list(browser, tmp_path, viewport):
    """A 40-digit source (the bottleneck study's) wraps inside its list item, at 100% and at 200%
    zoom (a 640x450 CSS-pixel viewport), instead of running past the list's edge."""
    path = write_explorer(reversal_document(), tmp_path / "explorer.html")
    page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]")
    widths = page.eval_on_selector_all('[data-testid="example-item"], #example-list', "ns => ns.map(n => n.scrollWidth - n.clientWidth)")
    page.close()
    assert len(widths) == 3 and max(widths) <= 1, widths


def test_the_page_works_in_a_sandboxed_frame_as_the_mlflow_ui_shows_it(browser, tmp_path):
    """MLflow's artifact viewer shows an HTML artifact as <iframe sandbox="allow-scripts"> of a
    blob: URL (an opaque origin: no storage, no same-origin access to the parent)."""
    page_text = json.dumps(explorer_html(DOCUMENT)).replace("</", "<\\/")
    host = tmp_path / "host.html"
    host.write_text(f"""<!DOCTYPE html><meta charset="utf-8"><body style="margin:0">
<iframe id="frame" sandbox="allow-scripts" style="width:1000px;height:700px;border:0"></iframe>
<script>document.getElementById("frame").src = URL.createObjectURL(new Blob([{page_text}], {{type: "text/html"}}));</script>
</body>""", encoding="utf-8")  # fmt: skip
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("request", lambda r: problems.append(r.url) if not r.url.startswith(("file:", "blob:")) else None)
    page.goto(host.as_uri())
    frame = page.frame_locator("#frame")
    frame.locator("body[data-ready]").wait_for()
    frame.locator('[data-testid="output-token"][data-index="2"]').hover()
    weights = DOCUMENT["models"][0]["examples"][0]["weights"]["average"][2]
    top = frame.locator('[data-testid="source-token"].top')
    assert top.count() == 1 and top.get_attribute("data-index") == str(argmax(weights))
    frame.locator('[data-testid="epoch-slider"]').focus()
    page.keyboard.press("Home")
    assert frame.locator('[data-testid="epoch-label"]').inner_text().startswith("epoch 1 ")
    assert page.url == host.as_uri()  # the frame never navigated its parent
    page.close()
    assert problems == []


def test_wrong_examples_come_first_and_are_marked(page):
    items = page.locator('[data-testid="example-item"]')
    assert "wrong" in items.nth(0).get_attribute("class") and "\u2717" in items.nth(0).inner_text()
    assert "wrong" not in (items.nth(1).get_attribute("class") or "")
    assert page.locator('[data-testid="example-list"] [aria-selected="true"]').get_attribute("data-index") == "0"


def test_hovering_an_output_token_shades_the_sources_by_weight_and_marks_the_argmax(page):
    example = DOCUMENT["models"][0]["examples"][0]
    for row, weights in enumerate(example["weights"]["average"]):
        page.hover(f'[data-testid="output-token"][data-index="{row}"]')
        assert indexes(page, '[data-testid="source-token"].top') == [argmax(weights)]
        assert alpha(page, '[data-testid="source-token"]') == pytest.approx(weights, abs=0.006)
        assert alpha(page, '[data-testid="output-token"]') == [None] * len(example["output_tokens"])


def test_hovering_a_source_token_shades_the_outputs_that_read_it(page):
    matrix = DOCUMENT["models"][0]["examples"][0]["weights"]["average"]
    for col in (0, 4, 9):
        page.hover(f'[data-testid="source-token"][data-index="{col}"]')
        column = [row[col] for row in matrix]
        assert indexes(page, '[data-testid="output-token"].top') == [argmax(column)]
        assert alpha(page, '[data-testid="output-token"]') == pytest.approx(column, abs=0.006)


def test_the_grid_shows_the_weights_with_gold_outlined_and_the_argmax_dotted(page):
    example = DOCUMENT["models"][0]["examples"][0]
    assert cells(page, "grid-cell") == example["weights"]["average"]
    argmaxes = page.eval_on_selector_all('[data-testid="grid-cell"].argmax', "ns => ns.map(n => [+n.dataset.row, +n.dataset.col])")
    assert argmaxes == [[r, argmax(row)] for r, row in enumerate(example["weights"]["average"])]
    golds = page.eval_on_selector_all('[data-testid="grid-cell"].gold', "ns => ns.map(n => [+n.dataset.row, +n.dataset.col])")
    assert golds == [[r, c] for r, positions in enumerate(example["gold"]) for c in positions]
    assert page.locator(".legend").inner_text().count("\n") >= 2  # weight ramp, gold, argmax


def test_the_view_selector_switches_heads(page):
    example = DOCUMENT["models"][0]["examples"][0]
    assert page.eval_on_selector_all('[data-testid="view-select"] option', "ns => ns.map(n => n.value)") == ["average", "head 1", "head 2"]
    for view in ("head 2", "head 1", "average"):
        page.select_option('[data-testid="view-select"]', view)
        assert cells(page, "grid-cell") == example["weights"][view]
        page.hover('[data-testid="output-token"][data-index="3"]')
        assert indexes(page, '[data-testid="source-token"].top') == [argmax(example["weights"][view][3])]


def test_the_explain_switch_draws_each_methods_attribution_on_the_same_example_with_its_gold(page):
    example = DOCUMENT["models"][0]["examples"][0]
    options = page.eval_on_selector_all('[data-testid="explain-select"] option', "ns => ns.map(n => n.textContent)")
    assert options == ["attention", "saliency", "integrated gradients"]
    golds = page.eval_on_selector_all('[data-testid="grid-cell"].gold', "ns => ns.map(n => [+n.dataset.row, +n.dataset.col])")
    for method in METHODS:
        page.select_option('[data-testid="explain-select"]', method)
        shares = example["explained"][method]
        assert cells(page, "grid-cell") == shares
        assert page.locator('[data-testid="detail-heading"]').inner_text() == f"Attribution: {method.replace('_', ' ')}"
        assert page.locator('[data-testid="view-select"]').is_hidden()  # heads are attention's
        assert "share of the attribution, 0 to 1" in page.locator(".legend").inner_text()
        assert page.eval_on_selector_all('[data-testid="grid-cell"].gold', "ns => ns.map(n => [+n.dataset.row, +n.dataset.col])") == golds
        page.hover('[data-testid="output-token"][data-index="3"]')
        assert indexes(page, '[data-testid="source-token"].top') == [argmax(shares[3])]
        assert f"depends most, by {method.replace('_', ' ')}, on source" in page.locator("#hover-info").inner_text()
    # the same navigation: the next example is drawn by the method chosen; one not explained says so
    page.locator('[data-testid="example-item"]').nth(1).click()
    assert cells(page, "grid-cell") == DOCUMENT["models"][0]["examples"][1]["explained"]["integrated_gradients"]
    page.locator('[data-testid="example-item"]').nth(EXPLAINED).click()
    assert page.locator('[data-testid="no-weights"]').inner_text() == (
        f"this example is not explained by integrated gradients: the page explains its first {EXPLAINED} examples"
    )
    page.select_option('[data-testid="explain-select"]', "attention")
    assert cells(page, "grid-cell") == DOCUMENT["models"][0]["examples"][EXPLAINED]["weights"]["average"]
    assert page.locator('[data-testid="view-select"]').is_visible()
    page.select_option('[data-testid="model-select"]', "1")  # a model without attributions: no switch
    assert page.locator('[data-testid="explain-select"]').is_hidden()


def test_the_epoch_slider_redraws_the_snapshot_with_that_epochs_weights(page):
    probes = DOCUMENT["models"][0]["snapshots"]["examples"]
    assert cells(page, "snapshot-cell") == probes[0]["weights"][-1]  # opens on the last epoch
    slider = page.locator('[data-testid="epoch-slider"]')
    slider.focus()
    page.keyboard.press("Home")
    assert cells(page, "snapshot-cell") == probes[0]["weights"][0]
    assert "epoch 1" in page.locator('[data-testid="epoch-label"]').inner_text()
    page.keyboard.press("ArrowRight")
    assert cells(page, "snapshot-cell") == probes[0]["weights"][1]
    page.select_option('[data-testid="probe-select"]', "1")
    assert cells(page, "snapshot-cell") == probes[1]["weights"][1]
    # The summary line: per epoch, the aligned steps whose most attended source is gold.
    gold = probes[1]["gold"]
    on_gold = [sum(argmax(row) in gold[i] for i, row in enumerate(m[: len(gold)])) for m in probes[1]["weights"]]
    aligned = sum(1 for positions in gold if positions)
    summary = " \u00b7 ".join(f"{e}: {n}/{aligned}" for e, n in zip((1, 2, 3), on_gold))
    assert page.locator('[data-testid="snapshot-info"]').inner_text() == f"most attended source on gold, by epoch: {summary}"
    assert page.locator('[data-testid="snapshot-info"] strong').inner_text() == f"2: {on_gold[1]}/{aligned}"


def test_the_model_selector_switches_model_keeping_the_input(page):
    page.locator('[data-testid="example-item"]').nth(2).click()
    page.select_option('[data-testid="model-select"]', "1")
    additive = DOCUMENT["models"][1]
    assert page.locator('[data-testid="view-select"]').is_hidden()  # one view only
    assert cells(page, "grid-cell") == additive["examples"][2]["weights"]["average"]
    assert cells(page, "snapshot-cell") == additive["snapshots"]["examples"][0]["weights"][-1]
    assert "\u2717" not in page.locator('[data-testid="example-list"]').inner_text()  # every one right
    page.select_option('[data-testid="model-select"]', "2")
    assert page.locator('[data-testid="no-weights"]').inner_text() == "this model has no attention weights"
    assert page.locator('[data-testid="grid-cell"]').count() == 0 and page.locator("#snapshots").is_hidden()
    outputs = page.eval_on_selector_all('[data-testid="output-token"]', "ns => ns.map(n => n.textContent)")
    assert outputs == DOCUMENT["models"][2]["examples"][2]["output_tokens"]


def test_the_search_box_filters_the_list(page):
    search = page.locator('[data-testid="search"]')
    visible = '[data-testid="example-item"]:visible'
    search.fill("1999")
    assert indexes(page, visible) == [1]
    search.fill("年11月")  # output text
    assert indexes(page, visible) == [3]
    search.fill("25日")  # the wrong one's target, not its output
    assert indexes(page, visible) == [0]
    search.fill("no such date")
    assert indexes(page, visible) == []
    search.fill("")
    assert indexes(page, visible) == [0, 1, 2, 3, 4]
    page.check('[data-testid="wrong-only"]')
    assert indexes(page, visible) == [0]


def test_the_keyboard_reaches_the_controls_list_and_tokens_and_enter_chooses(page):
    reached = []
    for _ in range(40):
        page.keyboard.press("Tab")
        testid = page.evaluate("document.activeElement.dataset.testid || document.activeElement.id")
        reached.append(testid)
        if testid == "output-token":
            break
    for hook in ("model-select", "view-select", "search", "example-item", "source-token", "output-token"):
        assert hook in reached, reached
    assert reached.count("example-item") == 1, reached  # the list is one tab stop; arrows move in it
    # Focus highlights as hover does: the focused output token's argmax source is marked.
    weights = DOCUMENT["models"][0]["examples"][0]["weights"]["average"][0]
    assert indexes(page, '[data-testid="source-token"].top') == [argmax(weights)]
    page.locator('[data-testid="example-item"][tabindex="0"]').focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.index") == "2"
    assert page.locator('[aria-selected="true"]').get_attribute("data-index") == "0"  # moving is not choosing
    page.keyboard.press("Enter")
    assert page.locator('[aria-selected="true"]').get_attribute("data-index") == "2"
    sources = page.eval_on_selector_all('[data-testid="source-token"]', "ns => ns.map(n => n.textContent)")
    assert sources == [t if t != " " else "\u2423" for t in DOCUMENT["models"][0]["examples"][2]["source_tokens"]]


# Every token, and every cell of both grids, sits in no box that hides an overflow it has (such a
# box scrolls only by script), can be brought into view and is the element found at its centre.
REACHABLE = """sel => Array.from(document.querySelectorAll(sel)).filter(n => {
    for (let a = n.parentElement; a; a = a.parentElement) {
        const s = getComputedStyle(a);
        if (/hidden|clip/.test(s.overflowX) && a.scrollWidth > a.clientWidth + 1) return true;
        if (/hidden|clip/.test(s.overflowY) && a.scrollHeight > a.clientHeight + 1) return true;
    }
    n.scrollIntoView({block: 'center', inline: 'center'});
    const r = n.getBoundingClientRect();
    const inside = r.width > 0 && r.left >= 0 && r.top >= 0 && r.right <= innerWidth + 1 && r.bottom <= innerHeight + 1;
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return !(inside && hit && (hit === n || n.contains(hit)));
}).map(n => n.dataset.testid + ' ' + (n.dataset.index ?? n.dataset.row + ',' + n.dataset.col))"""
ALL = '[data-testid="source-token"], [data-testid="output-token"], [data-testid="grid-cell"], [data-testid="snapshot-cell"]'


@pytest.mark.parametrize("zoom", ["viewport", "css"])
def test_at_200_percent_zoom_every_token_and_cell_can_be_seen(page, zoom):
    """200% zoom of a 1280x900 window, two ways: the 640x450 CSS-pixel viewport a browser zoom
    gives, and CSS zoom 2 on the body at 1280x900; on the long example (34 source characters),
    whose tokens must wrap and whose grid must scroll."""
    page.locator(f'[data-testid="example-item"][data-index="{LONG}"]').click()
    if zoom == "viewport":
        page.set_viewport_size({"width": 640, "height": 450})
    else:
        page.evaluate("document.body.style.zoom = '2'")
    assert page.evaluate(REACHABLE, ALL) == []
    # Tokens wrap instead of running off: every token row fits its box.
    overflow = page.eval_on_selector_all(".token-row", "ns => ns.map(n => n.scrollWidth - n.clientWidth)")
    assert overflow and max(overflow) <= 1
    page.hover('[data-testid="output-token"][data-index="1"]')
    weights = DOCUMENT["models"][0]["examples"][LONG]["weights"]["average"][1]
    assert indexes(page, '[data-testid="source-token"].top') == [argmax(weights)]


def element_png(page, selector: str, family: str, text: str) -> bytes:
    """A screenshot of the element at ``selector`` showing ``text`` in ``family`` only."""
    page.eval_on_selector(selector, "(n, [family, text]) => { n.style.fontFamily = family; n.textContent = text; }", [family, text])
    page.evaluate("document.fonts.ready.then(() => true)")
    return page.locator(selector).screenshot(animations="disabled")


def grey(png: bytes) -> list[int]:
    """The grey levels (0 black to 255 white) of ``png``'s pixels, row by row."""
    import io

    from PIL import Image

    return list(Image.open(io.BytesIO(png)).convert("L").get_flattened_data())


def ink(png: bytes) -> int:
    """How many pixels of ``png`` are darker than mid-grey."""
    return sum(1 for value in grey(png) if value < 128)


def unlike(a: bytes, b: bytes) -> int:
    """How many pixels of two same-sized screenshots differ by more than a quarter of the grey
    scale (antialiasing of one outline from two copies of a font stays below it)."""
    first, second = grey(a), grey(b)
    assert len(first) == len(second)
    return sum(1 for x, y in zip(first, second) if abs(x - y) > 64)


def test_cjk_output_characters_are_drawn_from_the_embedded_font_not_as_boxes(page):
    """年, 月 and 日 of an output token, drawn in the page's embedded family alone, are pixel for
    pixel the glyphs of the bundled font (cut here from its file and loaded as another family),
    whatever fonts the system has; a blank token has less ink. With no CJK system font (fc-list
    :lang=ja prints nothing on a machine set up by make setup), the same characters in a family
    that does not exist are the boxes the page showed before, and in the page's own font list
    they are the bundled font's."""
    import base64
    import io
    import subprocess

    from fontTools import subset

    from attnlab.viz.fonts import EMBEDDED_FAMILY, bundled_cjk_font

    # The reference: the bundled font cut to the same three characters, as plain TrueType
    # (FreeType's autohinter sizes its strokes from the glyphs a font holds, so the whole 6 MB
    # font draws 月 a pixel differently).
    font = subset.load_font(str(bundled_cjk_font()), subset.Options())
    subsetter = subset.Subsetter()
    subsetter.populate(text="年月日")
    subsetter.subset(font)
    cut = io.BytesIO()
    font.save(cut)
    page.evaluate("""async b64 => {
        const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
        const face = new FontFace("bundled reference", bytes);
        document.fonts.add(await face.load());
    }""", base64.b64encode(cut.getvalue()).decode("ascii"))  # fmt: skip
    token = '[data-testid="output-token"][data-index="4"]'  # 年 of the first example's output
    assert page.locator(token).inner_text() == "年"
    blank = ink(element_png(page, token, f'"{EMBEDDED_FAMILY}"', ""))
    system_has_cjk = subprocess.run(["fc-list", ":lang=ja"], capture_output=True, text=True).stdout.strip() != ""
    for character in "年月日":
        embedded = element_png(page, token, f'"{EMBEDDED_FAMILY}"', character)
        reference = element_png(page, token, '"bundled reference"', character)
        fallback = element_png(page, token, '"no such family"', character)
        print(f"{character}: ink {ink(embedded)} (blank token {blank}); pixels unlike the bundled font's glyph "
              f"{unlike(embedded, reference)}, unlike the system's fallback {unlike(embedded, fallback)}")  # fmt: skip
        assert unlike(embedded, reference) == 0, character
        assert ink(embedded) > blank + 20, character
        if not system_has_cjk:  # then the page's own font list reaches the embedded font
            assert unlike(embedded, fallback) > 20, character
            assert unlike(element_png(page, token, "", character), reference) == 0, character
