"""A griffe extension for the API pages: reST roles in docstrings read as code.

The source docstrings use reST roles (:func:`masked_softmax`, :class:`~torch.Tensor`) and
literal blocks introduced by ``::``. Markdown shows a role as ``:func:`` followed by a code span
and keeps the ``::``; this extension turns each role into its code span (``~a.b.c`` shows ``c``)
and a paragraph-ending ``::`` into ``:`` before the docstring is parsed; a doctest (``>>>`` lines
and their output, up to a blank line) becomes a fenced ``pycon`` block, so that its brackets are
not read as Markdown links. The source is untouched.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLES = "func|meth|class|mod|attr|obj|data|exc|const|ref"
_ROLE = re.compile(rf":(?:py:)?(?:{_ROLES}):`(~?)([^`]+)`")
_LITERAL = re.compile(r"(?<=\S)::$", re.MULTILINE)
_LONE_LITERAL = re.compile(r"^\s*::$", re.MULTILINE)


def _role(match: re.Match[str]) -> str:
    short, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def fence_doctests(text: str) -> str:
    """Each run of doctest lines (from a ``>>>`` line to the next blank one) fenced as ``pycon``."""
    out: list[str] = []
    indent: str | None = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if indent is None and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
        elif indent is not None and not stripped:
            out.append(f"{indent}```")
            indent = None
        out.append(line)
    if indent is not None:
        out.append(f"{indent}```")
    return "\n".join(out)


def rewrite(text: str) -> str:
    """The docstring with its roles as code spans, ``::`` block openers as ``:`` and doctests fenced."""
    text = _ROLE.sub(_role, text)
    text = _LONE_LITERAL.sub("", text)
    return fence_doctests(_LITERAL.sub(":", text))


class RestRoles(griffe.Extension):
    """Rewrites every docstring as it is loaded (static or dynamic analysis alike)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
