"""Files and folders a command writes (``--plot``, ``--html``, ``--save-plots``), checked before
any work: a path that cannot be written is refused at once, not after the model ran.

Every command creates the missing parent folders of its output paths when it writes them, so a
missing folder is fine here; refused are a file path that is a folder, a folder path that is a
file, a parent that is a file, and a place this user may not write to (permissions, a read-only
file system).
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from attnlab.lab.errors import UserError


def check_output_file(option: str, path: Path | None, example: str = "out.png") -> None:
    """UserError naming ``option`` and ``path`` when a file cannot be written at ``path``
    (``example``: a file name to suggest when ``path`` is a folder); None passes."""
    if path is None:
        return
    problem = _guarded(path, lambda: _file_problem(path, example))
    if problem:
        raise UserError(f"{option} {str(path)!r} cannot be written: {problem}")


def check_output_folder(option: str, path: Path | None) -> None:
    """UserError naming ``option`` and ``path`` when files cannot be written into folder
    ``path`` (created if missing); None passes."""
    if path is None:
        return
    problem = _guarded(path, lambda: _folder_problem(path))
    if problem:
        raise UserError(f"{option} {str(path)!r} cannot be written: {problem}")


def _guarded(path: Path, check: Callable[[], str | None]) -> str | None:
    try:
        return check()
    except OSError as exc:  # e.g. a name longer than the file system allows
        return exc.strerror or str(exc)


def _file_problem(path: Path, example: str) -> str | None:
    if path.is_dir():
        return f"it is a folder; give a file name, e.g. {str(path / example)!r}"
    if path.exists():
        return None if os.access(path, os.W_OK) else _not_writable(path, "file")
    return _parent_problem(path)


def _folder_problem(path: Path) -> str | None:
    if path.is_dir():
        return _folder_refuses(path)
    if path.exists():
        return "it is a file, not a folder; give a folder name"
    return _parent_problem(path)


def _parent_problem(path: Path) -> str | None:
    """Why the folders above a missing ``path`` cannot hold it: the nearest existing one must be
    a folder this user may write to (the missing ones are created)."""
    folder = path.absolute().parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        return f"{str(folder)!r} is a file, not a folder"
    return _folder_refuses(folder)


def _folder_refuses(folder: Path) -> str | None:
    """Why nothing can be created in ``folder``, found by creating and removing an empty folder
    there: permission bits do not tell (root writes anywhere but on a read-only file system, and
    /proc refuses new entries to everyone)."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".attnlab-check-", dir=folder))
    except OSError as exc:
        return _not_writable(folder, "folder", exc.errno)
    return None


def _not_writable(path: Path, kind: str, code: int | None = None) -> str:
    if code == errno.EROFS or (code is None and os.statvfs(path).f_flag & os.ST_RDONLY):
        return f"the {kind} {str(path)!r} is on a read-only file system; choose a path elsewhere"
    if code in (None, errno.EACCES, errno.EPERM):
        return f"you may not write to the {kind} {str(path)!r}; choose a path elsewhere"
    return f"nothing can be created in the {kind} {str(path)!r} ({os.strerror(code)}); choose a path elsewhere"
