"""The CJK-capable font attnlab ships with (IPAexGothic from the ``matplotlib-fontja`` package) and
how a page embeds the glyphs it needs from it.

The heatmaps draw with the font file itself (:func:`bundled_cjk_font`); the explorer page carries
a subset of it, just the characters its document uses beyond ASCII (:func:`embedded_characters`),
as an inline ``@font-face`` with a ``data:`` URL (:func:`subset_font`, :func:`font_face_css`): a
machine without a CJK system font then shows 年, 月 and 日 instead of empty boxes, and the page
still fetches nothing. ASCII stays with the system's fonts (every base image has them): embedded
too, the page's monospace digits came from this proportional font.
"""

from __future__ import annotations

import base64
import importlib.util
import io
from pathlib import Path

#: The family name under which a page embeds its glyphs (listed before each generic family).
EMBEDDED_FAMILY = "attnlab glyphs"


def bundled_cjk_font() -> Path:
    """The TrueType file of IPAexGothic shipped by ``matplotlib-fontja``.

    The package folder is located with ``importlib.util.find_spec`` *without importing it*:
    importing ``matplotlib_fontja`` calls ``japanize()``, which rewrites matplotlib's global
    ``rcParams["font.family"]``. Raises RuntimeError when the package is missing.
    """
    spec = importlib.util.find_spec("matplotlib_fontja")
    dirs = list(spec.submodule_search_locations or []) if spec else []
    fonts = sorted(p for d in dirs for p in Path(d, "fonts").glob("*.ttf"))
    if not fonts:
        raise RuntimeError(
            "No CJK font found: install the 'matplotlib-fontja' package (pip install matplotlib-fontja) to render CJK characters."
        )
    return fonts[0]


def embedded_characters(characters: str) -> str:
    """The characters of ``characters`` a page embeds glyphs for: those beyond ASCII, sorted, once
    each."""
    return "".join(sorted({c for c in characters if ord(c) > 0x7F}))


def subset_font(font: bytes, characters: str) -> bytes:
    """A WOFF font holding only the glyphs of ``characters`` that ``font`` (TrueType/OpenType
    bytes) has, with no layout features (a page of single characters shapes nothing)."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = []
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=characters)
    parsed = TTFont(io.BytesIO(font), lazy=True)
    subsetter.subset(parsed)
    out = io.BytesIO()
    subset.save_font(parsed, out, options)
    return out.getvalue()


def font_face_css(woff: bytes, family: str = EMBEDDED_FAMILY) -> str:
    """An ``@font-face`` rule that defines ``family`` from ``woff`` bytes inline (a ``data:``
    URL), drawn as soon as the page is (``font-display: block``)."""
    if '"' in family or "\\" in family:
        raise ValueError(f"font family {family!r}: no quotes or backslashes")
    data = base64.b64encode(woff).decode("ascii")
    return f'@font-face {{ font-family: "{family}"; src: url(data:font/woff;base64,{data}) format("woff"); font-display: block; }}\n'
