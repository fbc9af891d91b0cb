"""attnlab's cache folder (datasets, checkpoints kept after a lost server, server logs)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """``ATTNLAB_CACHE_DIR``, else ``$XDG_CACHE_HOME/attnlab`` or ``~/.cache/attnlab``."""
    root = os.environ.get("ATTNLAB_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnlab"
    return Path(root)
