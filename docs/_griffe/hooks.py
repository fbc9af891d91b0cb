"""MkDocs hook: a source tree laid out as the import package, for mkdocstrings to read.

setuptools maps ``attnlab`` to ``components/``, ``attnlab.plugins`` to ``plugins/`` and
``attnlab.flows`` to ``flows/`` (``package-dir`` in pyproject.toml). griffe finds a package by its
folder name, so before each build this hook lays out ``build/api-src/attnlab/`` as symbolic links
to those folders (every entry of ``components/``, then ``plugins`` and ``flows``); mkdocs.yml points
the python handler's ``paths`` at ``build/api-src``. The links follow the working tree, so a module
added or moved in the source is documented as it is, with nothing to regenerate by hand.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "build" / "api-src" / "attnlab"
SUBPACKAGES = {"plugins": ROOT / "plugins", "flows": ROOT / "flows"}


def lay_out() -> Path:
    """(Re)create the linked tree and return its root (the folder to put on griffe's paths)."""
    if TREE.exists():
        shutil.rmtree(TREE)
    TREE.mkdir(parents=True)
    for entry in sorted((ROOT / "components").iterdir()):
        if entry.name != "__pycache__" and entry.name not in SUBPACKAGES:
            (TREE / entry.name).symlink_to(entry)
    for name, target in SUBPACKAGES.items():
        (TREE / name).symlink_to(target)
    return TREE.parent


def on_startup(**kwargs) -> None:
    lay_out()


def on_pre_build(**kwargs) -> None:
    lay_out()
