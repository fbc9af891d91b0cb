"""attnlab.viz.fonts: the bundled CJK font, the characters a page embeds, the subset and its @font-face.
The page's use of them: tests/components/test_explorer_page.py; in a browser:
tests/flows/test_explorer_browser.py."""

from __future__ import annotations

import base64
import io
import re

import pytest
from fontTools.ttLib import TTFont

from attnlab.viz.fonts import EMBEDDED_FAMILY, bundled_cjk_font, embedded_characters, font_face_css, subset_font


def cmap(font: bytes) -> set[str]:
    """The characters ``font`` has glyphs for."""
    return {chr(code) for code in TTFont(io.BytesIO(font)).getBestCmap()}


def test_the_bundled_font_has_the_date_tasks_characters():
    path = bundled_cjk_font()
    assert path.suffix == ".ttf" and {"年", "月", "日"} <= cmap(path.read_bytes())


def test_a_page_embeds_its_characters_beyond_ascii_once_each_in_order():
    assert embedded_characters("2023年12月25日 <eos> é年") == "é年日月"
    assert embedded_characters("0123456789-/., <eos>") == ""


def test_the_subset_holds_exactly_the_characters_asked_for_that_the_font_has():
    font = bundled_cjk_font().read_bytes()
    woff = subset_font(font, "年月日\u0378")  # U+0378 is unassigned: no font has it
    assert woff[:4] == b"wOFF"
    assert cmap(woff) == {"年", "月", "日"}
    assert len(woff) < 4000, len(woff)  # from a 6 MB font


def test_font_face_css_carries_the_bytes_under_the_family():
    css = font_face_css(b"wOFF-bytes", family="test family")
    (data,) = re.findall(r"url\(data:font/woff;base64,([A-Za-z0-9+/=]+)\)", css)
    assert base64.b64decode(data) == b"wOFF-bytes"
    assert css.startswith('@font-face { font-family: "test family";') and 'format("woff")' in css
    assert f'"{EMBEDDED_FAMILY}"' in font_face_css(b"x")


@pytest.mark.parametrize("family", ['a"b', "a\\b"])
def test_font_face_css_refuses_a_family_that_would_break_the_rule(family):
    with pytest.raises(ValueError, match="no quotes or backslashes"):
        font_face_css(b"x", family=family)
