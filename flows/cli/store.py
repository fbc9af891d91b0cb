"""``attnlab store relocate``: make a copied or moved embedded store keep its files in its own
folder (see :mod:`attnlab.flows.tracking.store_home`)."""

from __future__ import annotations

import sqlite3

import typer

from attnlab.flows.cli.options import Verbose
from attnlab.flows.cli.support import quiet, user_errors
from attnlab.flows.tracking.errors import UserError

store_app = typer.Typer(help="Look after the embedded MLflow store.", no_args_is_help=True, add_completion=False, rich_markup_mode=None)


def register(app: typer.Typer) -> None:
    """Add ``store`` (with ``relocate``) to the ``attnlab`` app."""
    app.add_typer(store_app, name="store")


@store_app.command()
def relocate(verbose: Verbose = False) -> None:
    """Rewrite the file locations a copied or moved embedded store records (experiments, runs,
    model versions, logged models) from its old folder to ATTNLAB_MLFLOW_DIR (default ./mlflow)."""
    quiet(verbose)
    with user_errors():
        typer.echo(relocate_store())


def relocate_store() -> str:
    """Relocate the store this process uses; the line that says what changed."""
    from attnlab.flows.tracking import store_guard, store_home, store_writable
    from attnlab.flows.tracking.store import resolve_store

    store = resolve_store()
    folder = store.folder  # None for a tracking server
    if folder is None:
        raise UserError(
            f"'attnlab store relocate' works on the embedded store, not on {store.tracking_uri}; "
            "unset MLFLOW_TRACKING_URI and set ATTNLAB_MLFLOW_DIR to the copied store's folder"
        )
    store_guard.check_not_lost(folder)
    if not (folder / "mlflow.db").is_file():
        raise UserError(f"no MLflow store at {folder} to relocate; point ATTNLAB_MLFLOW_DIR at the copied or moved store's folder")
    with store_guard.guarded(folder):
        pass  # refuses a damaged or half-migrated database in one line
    try:
        done = store_home.relocate(folder)
    except (OSError, sqlite3.Error) as exc:
        raise store_writable.not_writable(folder, exc) from exc
    if not done.old_roots:
        return f"the MLflow store {folder} keeps its files in {folder / 'artifacts'}; nothing to relocate"
    counts = ", ".join(f"{what} {count}" for what, count in done.changed.items() if count)
    return f"relocated the MLflow store {folder} from {' and '.join(done.old_roots)}: {counts}"
