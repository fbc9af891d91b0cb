"""Output paths that cannot be written (--plot, --html, --save-plots) are refused in one line
naming the path, before any model loads or any run starts; missing folders are created."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _flowkit import assert_one_line_error

from attnlab.flows.cli.app import main

#: A fresh interpreter runs the command and reports (exit status, heavy modules it imported).
SCRIPT = (
    "import json, sys\n"
    "from attnlab.flows.cli.app import main\n"
    "code = main(json.loads(sys.argv[1]))\n"
    "print(json.dumps([code, sorted(m for m in ('torch', 'prefect', 'mlflow') if m in sys.modules)]))\n"
)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    """An untrained tiny date model saved as a bundle folder."""
    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    config = ExperimentConfig(hidden_size=8, embedding_dim=8)
    return save_bundle(tmp_path_factory.mktemp("bundle"), config, build_model(config, build_task(config)))


def unwritable(kind: str, tmp_path: Path, read_only: Path) -> tuple[Path, str]:
    """A path of ``kind`` that cannot be written, and what the refusal says about it."""
    (tmp_path / "file").write_text("")
    return {
        "read-only": (read_only / "out" / "x.png", "cannot be written"),
        "folder": (tmp_path, "is a folder"),
        "parent is a file": (tmp_path / "file" / "x.png", "is a file, not a folder"),
    }[kind]


def fresh(args: list[str], cwd: Path) -> tuple[int, list[str], str]:
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(args)], capture_output=True, text=True, timeout=300, cwd=cwd)
    code, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    return code, heavy, done.stderr


@pytest.mark.parametrize("option", ["--plot", "--html"])
@pytest.mark.parametrize("kind", ["read-only", "folder", "parent is a file"])
def test_predict_refuses_before_loading_the_model(bundle, tmp_path, read_only_folder, option, kind):
    path, why = unwritable(kind, tmp_path, read_only_folder)
    code, heavy, err = fresh(["predict", "--model", str(bundle), "25-12-2023", option, str(path)], tmp_path)
    assert (code, heavy) == (2, [])
    assert_one_line_error(err, f"{option} {str(path)!r}", why)


def test_predict_creates_missing_folders(bundle, tmp_path, capsys):
    plot, page = tmp_path / "a" / "b" / "heat.png", tmp_path / "c" / "page.html"
    assert main(["predict", "--model", str(bundle), "25-12-2023", "--plot", str(plot), "--html", str(page)]) == 0
    assert plot.is_file() and page.is_file()


@pytest.mark.parametrize("kind", ["read-only", "folder", "parent is a file"])
def test_compare_refuses_before_opening_the_store(empty_store, tmp_path, read_only_folder, capsys, kind):
    path, why = unwritable(kind, tmp_path, read_only_folder)
    assert main(["compare", "abc", "def", "--plot", str(path)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"--plot {str(path)!r}", why)
    assert not empty_store.exists()


@pytest.mark.parametrize("where", ["itself", "below"])
def test_sweep_refuses_a_read_only_folder_before_anything_starts(empty_store, read_only_folder, capsys, where):
    folder = read_only_folder if where == "itself" else read_only_folder / "figures"
    tiny = ["--epochs", "1", "--train-size", "100", "--hidden-size", "8", "-o", "validation_size=20", "-o", "test_size=20"]
    assert main(["sweep", "--task", "reverse", "--scorer", "dot", *tiny, "--save-plots", str(folder)]) == 2
    assert_one_line_error(capsys.readouterr().err, f"--save-plots {str(folder)!r}", "cannot be written", str(read_only_folder))
    assert not empty_store.exists()
