"""What the tests of the published study stores share: a store archive opened as the study's page
tells (extracted, then ``attnlab store relocate``)."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from _flowkit import point_at
from test_store_integrity import attnlab


def unpacked(archive: Path, folder: Path) -> Path:
    """The store of ``archive`` extracted into ``folder``: its ``mlflow`` folder."""
    with tarfile.open(archive) as opened:
        opened.extractall(folder, filter="data")
    return folder / "mlflow"


def relocated_store(archive: Path, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """The store of ``archive`` extracted into ``folder``, made this process's embedded store and
    relocated there by ``attnlab store relocate`` (checked to say so); its folder."""
    store = point_at(unpacked(archive, folder), monkeypatch)
    code, out, err = attnlab(capsys, "store", "relocate")
    assert code == 0 and out.startswith(f"relocated the MLflow store {store} from "), err
    return store
