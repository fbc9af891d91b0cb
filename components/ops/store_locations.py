"""Where an embedded MLflow store records its files, and whether that is the store's own folder.

MLflow records absolute artifact locations (an experiment's ``artifact_location``, a run's
``artifact_uri``, a model version's ``storage_location``...). attnlab creates each experiment at
``<store>/artifacts/<name>``, so the store folder a location was recorded under can be read back
from it. A store copied or moved elsewhere still records the old folder: its runs would write
there. These rules find such an old folder and rewrite a location from it to the new one.

>>> local_path("file:///data/my%20store/artifacts/attnlab-date")
PurePosixPath('/data/my store/artifacts/attnlab-date')
>>> foreign_roots([("1", "attnlab-date", "file:///old/mlflow/artifacts/attnlab-date")], "/new/mlflow")
['/old/mlflow']
>>> relocated("file:///old/mlflow/artifacts/attnlab-date/abc/artifacts", "/old/mlflow", "/new/mlflow")
'file:///new/mlflow/artifacts/attnlab-date/abc/artifacts'
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit


def local_path(location: str | None) -> PurePosixPath | None:
    """The local file path of ``location`` (a ``file:`` URI or an absolute path), or None for
    anything else (a server's ``mlflow-artifacts:``, ``s3://``, ``models:/``...)."""
    if not location:
        return None
    if location.startswith("file:"):
        parts = urlsplit(location)
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            return None
        return PurePosixPath(unquote(parts.path))
    return PurePosixPath(location) if location.startswith("/") else None


def is_under(path: PurePosixPath, root: PurePosixPath) -> bool:
    """True when ``path`` is ``root`` or inside it."""
    return path == root or root in path.parents


def recorded_root(experiment_id: str, name: str, location: str | None) -> PurePosixPath | None:
    """The store folder an experiment's location ``<store>/artifacts/<name or id>`` was recorded
    under, or None when the location has another shape (MLflow's ``Default`` experiment, a
    server's artifact store)."""
    path = local_path(location)
    if path is None:
        return None
    for tail in (name, experiment_id):
        tail_parts = PurePosixPath("artifacts", tail).parts
        if len(path.parts) > len(tail_parts) and path.parts[-len(tail_parts) :] == tail_parts:
            return PurePosixPath(*path.parts[: -len(tail_parts)])
    return None


def foreign_roots(experiments: Iterable[tuple[str, str, str | None]], folder: str | PurePosixPath) -> list[str]:
    """The store folders other than ``folder`` under which the (id, name, artifact location) of
    ``experiments`` were recorded, sorted: where a copied or moved store still writes."""
    home = PurePosixPath(folder)
    roots = {recorded_root(str(key), name, location) for key, name, location in experiments}
    return sorted(str(root) for root in roots if root is not None and root != home)


def relocated(location: str | None, old: str, new: str) -> str | None:
    """``location`` with the store folder ``old`` replaced by ``new``, in the same form (a
    ``file:`` URI or a plain path); None when it is not under ``old``."""
    path = local_path(location)
    if path is None or not is_under(path, PurePosixPath(old)):
        return None
    moved = PurePosixPath(new) / path.relative_to(old)
    return moved.as_uri() if location is not None and location.startswith("file:") else str(moved)
