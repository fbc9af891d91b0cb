"""Where a store records its files: the folder read back from an experiment's location, the
folders other than the store's own, and a location rewritten from one folder to another."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from attnlab.ops.store_locations import foreign_roots, is_under, local_path, recorded_root, relocated


@pytest.mark.parametrize(
    "location, path",
    [
        ("file:///a/b", "/a/b"),
        ("file:/a/b", "/a/b"),
        ("file://localhost/a/b", "/a/b"),
        ("file:///a/my%20store/%C3%A9", "/a/my store/é"),
        ("/a/b", "/a/b"),
    ],
)
def test_local_locations_are_paths(location, path):
    assert local_path(location) == PurePosixPath(path)


@pytest.mark.parametrize("location", [None, "", "mlflow-artifacts:/1/abc", "s3://bucket/a", "models:/m-123", "file://host/a", "./mlruns"])
def test_other_locations_are_not_local(location):
    assert local_path(location) is None


def test_under_is_by_whole_folder_names():
    assert is_under(PurePosixPath("/s/mlflow/artifacts"), PurePosixPath("/s/mlflow"))
    assert is_under(PurePosixPath("/s/mlflow"), PurePosixPath("/s/mlflow"))
    assert not is_under(PurePosixPath("/s/mlflow-copy/artifacts"), PurePosixPath("/s/mlflow"))


def test_the_store_folder_is_read_back_from_the_name_or_the_id():
    assert recorded_root("1", "attnlab-date", "file:///old/mlflow/artifacts/attnlab-date") == PurePosixPath("/old/mlflow")
    assert recorded_root("7", "mine", "file:///old/mlflow/artifacts/7") == PurePosixPath("/old/mlflow")
    assert recorded_root("2", "team/exp", "/old/mlflow/artifacts/team/exp") == PurePosixPath("/old/mlflow")
    # a folder named 'artifacts' above the store does not confuse it
    assert recorded_root("1", "attnlab-date", "file:///artifacts/x/artifacts/attnlab-date") == PurePosixPath("/artifacts/x")


def test_locations_of_another_shape_have_no_store_folder():
    assert recorded_root("0", "Default", "/home/me/mlruns/0") is None  # MLflow's own default
    assert recorded_root("1", "attnlab-date", "mlflow-artifacts:/1") is None
    assert recorded_root("1", "attnlab-date", "file:///old/mlflow/artifacts/other") is None


def test_foreign_roots_are_the_folders_other_than_the_store():
    experiments = [
        ("0", "Default", "/home/me/mlruns/0"),
        ("1", "attnlab-date", "file:///old/mlflow/artifacts/attnlab-date"),
        ("2", "attnlab-reverse", "file:///new/mlflow/artifacts/attnlab-reverse"),
        ("3", "attnlab-x", "file:///older/mlflow/artifacts/attnlab-x"),
        ("4", "attnlab-y", "file:///old/mlflow/artifacts/attnlab-y"),
    ]
    assert foreign_roots(experiments, "/new/mlflow") == ["/old/mlflow", "/older/mlflow"]
    assert foreign_roots(experiments[:1] + experiments[2:3], PurePosixPath("/new/mlflow")) == []


@pytest.mark.parametrize(
    "location, moved",
    [
        ("file:///old/mlflow/artifacts/attnlab-date", "file:///new/my%20store/artifacts/attnlab-date"),
        ("file:///old/mlflow/artifacts/e/models/m-1/artifacts", "file:///new/my%20store/artifacts/e/models/m-1/artifacts"),
        ("/old/mlflow/artifacts/e/abc/artifacts", "/new/my store/artifacts/e/abc/artifacts"),
        ("file:///old/mlflow-2/artifacts/e", None),
        ("models:/m-1", None),
        ("/home/me/mlruns/0", None),
    ],
)
def test_a_location_moves_to_the_same_place_under_the_new_folder(location, moved):
    assert relocated(location, "/old/mlflow", "/new/my store") == moved
