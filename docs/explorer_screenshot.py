"""Screenshot of an attention explorer page (attention/explorer.html of a run) in headless Chromium.

Rebuilds the page from the document it carries (attnlab.viz.explorer, so the picture shows this
version's page), opens it at 1280 CSS pixels wide, chooses the first example (the wrong one, when there is
one), shows its first head when the model has several views, hovers an output character that has
a gold source, and writes the whole page as a 256-colour PNG.

With ``--explain METHOD`` it draws that gradient attribution instead of attention (the page's
*explain by* switch) and shows no head.

Usage: python docs/explorer_screenshot.py EXPLORER_HTML OUT_PNG [--zoom 2] [--explain integrated_gradients]
Needs: chromium (Debian: apt-get install chromium) and playwright (the project's dev extras).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from pathlib import Path

from PIL import Image
from playwright.sync_api import sync_playwright

from attnlab.viz.explorer import write_explorer

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip


def cjk_font_css() -> str:
    """A @font-face for the CJK characters of the date task (年月日) from matplotlib-fontja's
    IPAex Gothic, for machines without a CJK system font; empty when it is not installed."""
    try:
        import matplotlib_fontja  # noqa: PLC0415
    except ImportError:
        return ""
    fonts = sorted(Path(matplotlib_fontja.__file__).parent.glob("fonts/*.ttf"))
    if not fonts:
        return ""
    return "".join(
        f"@font-face {{ font-family: '{family}'; src: url('{fonts[0].as_uri()}'); }}"
        for family in ("Noto Sans CJK JP", "Noto Sans Mono CJK JP")
    )


def document_of(page: Path) -> dict:
    """The document a page carries (its #explorer-data script)."""
    text = re.search(r'id="explorer-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S).group(1)
    return json.loads(text)


def hovered_step(document: dict) -> int:
    """The first output step after the fourth of the first example with a gold source (else 0)."""
    gold = document["models"][0]["examples"][0]["gold"] or []
    return next((i for i, positions in enumerate(gold) if positions and i > 3), 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--zoom", type=float, default=1.0, help="browser zoom: 2 shows the page as at 200%%")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--explain", metavar="METHOD", help="draw this gradient attribution (e.g. integrated_gradients)")
    args = parser.parse_args()
    document = document_of(args.page)
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as folder, sync_playwright() as playwright:
        page_file = write_explorer(document, Path(folder) / "explorer.html")
        browser = playwright.chromium.launch(executable_path=executable, args=ARGS)
        page = browser.new_page(viewport={"width": round(args.width / args.zoom), "height": round(900 / args.zoom)},
                                device_scale_factor=args.zoom)  # fmt: skip
        page.goto(page_file.as_uri())
        page.wait_for_selector("body[data-ready]")
        if css := cjk_font_css():
            page.add_style_tag(content=css)
            page.evaluate("document.fonts.ready")
        views = page.eval_on_selector_all('[data-testid="view-select"] option', "ns => ns.map(n => n.value)")
        if args.explain:
            page.select_option('[data-testid="explain-select"]', args.explain)
        elif len(views) > 1:
            page.select_option('[data-testid="view-select"]', views[1])
        page.hover(f'[data-testid="output-token"][data-index="{hovered_step(document)}"]')
        page.screenshot(path=str(args.out), full_page=True)
        browser.close()
    Image.open(args.out).convert("RGB").quantize(256).save(args.out, optimize=True)


if __name__ == "__main__":
    main()
