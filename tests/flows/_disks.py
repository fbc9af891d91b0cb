"""Small real disks for the full-disk tests: a tmpfs of a given size, and a file filling it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """``folder`` with a real tmpfs of ``size`` (e.g. ``"64m"``) mounted on it, unmounted after;
    skips the test where mounting is not allowed (not root). CI runs as root."""
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; the filler file. Unbuffered, so that nothing is left in a
    buffer to fail again when the file is closed: a buffered writer keeps the tail of a short
    write (up to its 8 KiB) and raises ENOSPC a second time from ``close``."""
    filler = disk / "filler"
    block = b"\0" * 2**20
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(block)
        except OSError:
            pass
    return filler
