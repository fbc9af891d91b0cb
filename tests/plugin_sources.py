"""Plugin sources the tests ship as third-party distributions (importable from tests/ as
``plugin_sources``: pytest puts the folder of tests/conftest.py on the path)."""

from __future__ import annotations

import textwrap

from attnlab.plugins import attention


def documented_cosine() -> str:
    """The worked scorer of the attention contract's docstring (the README shows the same one)."""
    block = attention.__doc__.split("::\n\n", 1)[1].split("\n\nDeclared", 1)[0]
    return textwrap.dedent(block)
