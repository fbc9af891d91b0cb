"""Output paths (--plot, --html, --save-plots) checked before any work: missing folders are
fine (created on write); a folder given as a file, a file given as a folder, a parent that is a
file and a place nothing can be written to are refused in one sentence naming the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnlab.lab.errors import UserError
from attnlab.lab.output_paths import check_output_file, check_output_folder


def refusal(check, path: Path) -> str:
    with pytest.raises(UserError) as caught:
        check("--opt", path)
    return str(caught.value)


def test_missing_folders_pass_and_nothing_is_created(tmp_path):
    check_output_file("--opt", tmp_path / "a" / "b" / "x.png")
    check_output_folder("--opt", tmp_path / "c" / "d")
    check_output_file("--opt", None)
    check_output_folder("--opt", None)
    assert list(tmp_path.iterdir()) == []


def test_existing_writable_paths_pass(tmp_path):
    (tmp_path / "x.png").write_bytes(b"old")
    check_output_file("--opt", tmp_path / "x.png")
    check_output_folder("--opt", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.png"]  # the check leaves nothing


def test_a_folder_given_as_a_file_is_refused(tmp_path):
    message = refusal(check_output_file, tmp_path)
    assert f"--opt {str(tmp_path)!r}" in message and "is a folder" in message and "give a file name" in message


def test_a_file_given_as_a_folder_is_refused(tmp_path):
    (tmp_path / "plots").write_text("")
    message = refusal(check_output_folder, tmp_path / "plots")
    assert f"--opt {str(tmp_path / 'plots')!r} cannot be written: it is a file, not a folder" in message


@pytest.mark.parametrize("check", [check_output_file, check_output_folder])
def test_a_parent_that_is_a_file_is_refused(tmp_path, check):
    (tmp_path / "file").write_text("")
    message = refusal(check, tmp_path / "file" / "deeper" / "x.png")
    assert f"{str(tmp_path / 'file')!r} is a file, not a folder" in message


@pytest.mark.parametrize("check", [check_output_file, check_output_folder])
@pytest.mark.parametrize("below", ["", "new", "new/deeper"])
def test_a_read_only_folder_is_refused(read_only_folder, check, below):
    target = read_only_folder / below / "x.png" if below or check is check_output_file else read_only_folder
    message = refusal(check, target)
    assert f"--opt {str(target)!r} cannot be written" in message
    assert str(read_only_folder) in message
    assert "read-only file system" in message or "may not write" in message


def test_a_folder_that_takes_no_new_entries_is_refused():
    """/proc refuses new entries to everyone, root included, though its permission bits allow."""
    message = refusal(check_output_folder, Path("/proc/attnlab-plots"))
    assert "'/proc'" in message and "cannot be written" in message


def test_a_name_too_long_is_refused(tmp_path):
    message = refusal(check_output_file, tmp_path / ("x" * 300 + ".png"))
    assert "cannot be written" in message and "too long" in message
