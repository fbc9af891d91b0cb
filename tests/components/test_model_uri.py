"""--model values checked before MLflow sees them: models:/ and runs:/ URIs in their allowed
forms only (their names become paths in the store), no empty value, no plain file."""

from __future__ import annotations

import pytest

from attnlab.lab.errors import UserError
from attnlab.model.uri import FORMS, bundle_folder, check_model_option, check_model_uri, model_uri_problem


@pytest.mark.parametrize(
    "uri",
    [
        "models:/attnlab-date@champion",
        "models:/attnlab-date/3",
        "models:/attnlab-date/latest",
        "models:/my.model_v2/12",
        "models:/m-0123abcd",
        "runs:/0123456789abcdef0123456789abcdef/model",
        "runs:/0123456789abcdef0123456789abcdef/nested/model",
        "file:///tmp/model",
        "http://localhost:5000/model",
    ],
)
def test_well_formed_uris_pass(uri):
    assert model_uri_problem(uri) is None
    assert check_model_uri(uri) == uri


@pytest.mark.parametrize(
    "uri",
    [
        "models:/../../etc/passwd",
        "models:/attnlab-date/../1",
        "models:/..@champion",
        "models:/attnlab-date",
        "models:/attnlab-date/1/extra",
        "models:/attnlab-date@",
        "models:/",
        "runs:/../../etc/passwd",
        "runs:/abc/../model",
        "runs:/abc",
        "runs:/abc/",
    ],
)
def test_malformed_uris_are_refused_naming_the_allowed_forms(uri):
    with pytest.raises(UserError) as caught:
        check_model_uri(uri)
    message = str(caught.value)
    assert f"--model {uri!r}" in message and FORMS in message
    assert "\n" not in message


@pytest.mark.parametrize("empty", ["", " ", "\t"])
def test_an_empty_model_is_refused_not_taken_for_the_champion(empty):
    with pytest.raises(UserError, match="is empty.*leave --model out"):
        check_model_option(empty)


def test_a_file_is_no_model(tmp_path):
    (tmp_path / "weights.pt").write_bytes(b"")
    with pytest.raises(UserError, match="is a file; give the bundle folder"):
        check_model_option(str(tmp_path / "weights.pt"))


def test_a_folder_is_a_bundle_unless_it_is_a_saved_mlflow_model(tmp_path):
    assert bundle_folder(str(tmp_path)) == tmp_path  # empty: loading it names the missing files
    (tmp_path / "MLmodel").write_text("flavors: {}\n")
    assert bundle_folder(str(tmp_path)) is None
    assert bundle_folder(None) is None and bundle_folder("models:/x@champion") is None
