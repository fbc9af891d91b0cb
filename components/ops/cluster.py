"""What a sweep on a Dask cluster needs from the stores it reports to.

The cluster's workers run elsewhere (other machines, other folders and homes): a store that is a
file on the submitting machine cannot serve them, and neither can a temporary Prefect server on
its 127.0.0.1. Pure checks; the CLI refuses before anything starts.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

#: Tracking URI schemes a worker on another machine can reach.
SHARED_SCHEMES = ("http", "https", "databricks", "postgresql", "mysql", "mssql")
README_SECTION = "'Running a sweep on many machines' in the docs (docs/sweeps-cluster.md)"


def tracking_problem(tracking_uri: str, embedded_folder: Path | None) -> str | None:
    """Why the MLflow store cannot serve a cluster's workers, or None when it can."""
    if embedded_folder is not None:
        where = f"the embedded MLflow store {embedded_folder}"
    elif urlsplit(tracking_uri).scheme.split("+")[0] not in SHARED_SCHEMES:
        where = f"the MLflow store {tracking_uri}"
    else:
        return None
    return (
        f"{where} is on this machine, where the cluster's workers cannot log to it (each would write "
        "a ./mlflow of its own, its runs' parent missing); start a tracking server the workers can reach "
        f"and export MLFLOW_TRACKING_URI=http://HOST:PORT (see {README_SECTION})"
    )


def prefect_problem(api_url: str | None) -> str | None:
    """Why the cluster's workers cannot report to Prefect, or None when they can."""
    if api_url:
        return None
    return (
        "no Prefect server is configured (PREFECT_API_URL), and the temporary one this command would "
        "start listens on this machine's 127.0.0.1, out of the workers' reach; run 'attnlab server' "
        f"(or 'prefect server start') where the workers can reach it and export PREFECT_API_URL (see {README_SECTION})"
    )
