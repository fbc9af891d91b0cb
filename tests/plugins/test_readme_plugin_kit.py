"""The plugin-kit commands of the docs' plugin guide (docs/plugins.md, "Writing a plugin") name the
tools of attnlab's environment, and its ``test_cosine.py`` runs as the page says, next to the
page's ``attnlab_cosine.py``."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
_BLOCK = re.compile(r"^```python\n(# (\S+\.py)(?:: ([^\n]*))?\n.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks() -> dict[str, tuple[str, str | None]]:
    """File name -> (code, the command its first comment line gives or None) of each Python block
    that opens with ``# NAME.py``."""
    return {name: (code, command) for code, name, command in _BLOCK.findall(PAGE)}


def test_the_kit_commands_name_the_environments_tools():
    blocks = python_blocks()
    assert {"attnlab_cosine.py", "test_cosine.py", "fast_loop.py"} <= blocks.keys(), sorted(blocks)
    commands = [blocks[name][1] for name in ("test_cosine.py", "fast_loop.py")]
    assert all(command and command.startswith(".venv/bin/") for command in commands), commands
    assert "after .venv/bin/pip install" in blocks["fast_loop.py"][1]


@pytest.mark.slow
def test_the_page_test_cosine_passes_as_the_page_runs_it(tmp_path):
    blocks = python_blocks()
    for name in ("attnlab_cosine.py", "test_cosine.py"):
        (tmp_path / name).write_text(blocks[name][0], encoding="utf-8")
    command = shlex.split(blocks["test_cosine.py"][1])
    tool = Path(sys.executable).parent / Path(command[0]).name  # .venv/bin/X of this checkout
    done = subprocess.run([str(tool), *command[1:], "-p", "no:cacheprovider"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
