"""What the tests of the published study stores share: a benchmarks script loaded as the page's
tables come from it, and a store archive opened as the study's page tells (extracted, then
``attnlab store relocate``)."""

from __future__ import annotations

import importlib.util
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest
from _flowkit import point_at
from test_store_integrity import attnlab

ROOT = Path(__file__).parents[2]
BENCHMARKS = ROOT / "benchmarks"


def benchmark_script(name: str) -> ModuleType:
    """benchmarks/<name>.py as a module, the study scripts beside it importable while it loads."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    return module


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
