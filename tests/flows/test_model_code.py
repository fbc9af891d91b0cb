"""Loading a logged model runs its code (MLflow models from code): a copy whose pyfunc_model.py
was modified, or that puts its own code folder on the import path, is refused in one line before
anything in it runs; an unmodified one loads."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from _flowkit import point_at

from attnlab.flows.tracking.errors import UserError
from attnlab.flows.tracking.registry import load_pyfunc


@pytest.fixture
def model_copy(learned_store, monkeypatch, tmp_path):
    """A local copy of the learned store's model (the shared store itself stays untouched)."""
    import mlflow.artifacts

    folder, summary = learned_store
    point_at(folder, monkeypatch)
    from attnlab.flows.tracking.store import use_store

    use_store()
    return mlflow.artifacts.download_artifacts(artifact_uri=summary["model"]["uri"], dst_path=str(tmp_path / "model"))


def test_unmodified_model_loads(model_copy):
    assert load_pyfunc(model_copy).predict(pd.DataFrame({"source": ["25-12-2023"]})) == ["2023年12月25日"]


def test_modified_model_code_is_refused_before_it_runs(model_copy, tmp_path):
    marker = tmp_path / "code-ran"
    code = Path(model_copy) / "pyfunc_model.py"
    code.write_text(code.read_text() + f"\nopen({str(marker)!r}, 'w').close()\n")
    with pytest.raises(UserError) as caught:
        load_pyfunc(model_copy)
    assert not marker.exists()
    message = str(caught.value)
    assert "\n" not in message and "refusing to load the model" in message and "differs from the one attnlab installs" in message


def test_model_with_its_own_code_folder_is_refused(model_copy, tmp_path):

    model = Path(model_copy)
    (model / "code").mkdir()
    shutil.copy(__file__, model / "code" / "attnlab_shadow.py")
    meta = yaml.safe_load((model / "MLmodel").read_text())
    meta["flavors"]["python_function"]["code"] = "code"
    (model / "MLmodel").write_text(yaml.safe_dump(meta))
    with pytest.raises(UserError, match="puts its own code folder"):
        load_pyfunc(model_copy)
