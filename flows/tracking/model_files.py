"""Whether a registered model version's files are still where the store records them.

MLflow reports a model version whose folder was deleted as ``No such artifact: ''``; this names
the version and the missing folder instead.
"""

from __future__ import annotations

from pathlib import Path

from attnlab.ops.store_locations import local_path

RESTORE = "restore the store's artifacts/ from a backup (see 'Backup and restore' in mlflow/README.md)"


def missing_files(uri: str) -> str | None:
    """Why the model version that ``uri`` (``models:/NAME@ALIAS`` or ``models:/NAME/VERSION``)
    names cannot be loaded because its local files are gone, or None (they are there, the URI
    names no registered version, or its files are not on this machine)."""
    if not uri.startswith("models:/"):
        return None
    from mlflow.exceptions import MlflowException
    from mlflow.store.artifact.utils.models import get_model_name_and_version

    from mlflow import MlflowClient

    client = MlflowClient()
    try:
        found = get_model_name_and_version(client, uri)
        if len(found) != 2:
            return None  # models:/<model id>: not a registered version
        name, version = found
        run_id = client.get_model_version(name, str(version)).run_id
        folder = local_path(client.get_model_version_download_uri(name, str(version)))
    except MlflowException:
        return None
    if folder is None or Path(folder).exists():
        return None
    return (
        f"the files of model version {version} of {name!r} ({uri}, run {run_id}) are missing: {folder} "
        f"does not exist; {RESTORE}, or load another version (models:/{name}/VERSION)"
    )
