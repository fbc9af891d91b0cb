"""Shared fixtures: tiny sizes, fixed seeds, and throw-away plugin distributions. The run's own
homes and its reaper: _testrun.py."""

from __future__ import annotations

# First: the run's homes are set before anything imports prefect or mlflow; the reaper's hooks.
from _testrun import pytest_configure, pytest_unconfigure  # noqa: F401

# isort: split
import gc
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection imported (torch, Prefect, MLflow, the test modules) lives until the worker
    exits: frozen, later full collections skip it."""
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(42)


@pytest.fixture(autouse=True)
def _one_torch_thread() -> None:
    """Each test starts on one torch thread, also after a command run in-process chose its own:
    what the commands the tests start choose for themselves on a machine the other workers keep
    busy (attnlab.ops.threads). The tests' models are tiny: two threads meeting after every small
    operation cost more than they gave (tests/components/test_train.py and test_evaluate.py: 30
    CPU-s on two threads, 23 on one, on 2 quiet cores)."""
    torch.set_num_threads(1)


#: The longest test files, longest first (their total time in a run of the whole suite on 2 cores):
#: xdist hands out one file at a time to the next free worker, so starting them first keeps one of
#: them from being the last file running alone at the end. Only with `--no-loadscope-reorder` (as
#: `make test` runs): by default xdist sorts the files by their number of tests instead, which
#: sent these few-test files last.
LONGEST_FIRST = (
    "flows/test_sweep_faults.py", "flows/test_midrun_faults.py", "flows/test_schedule.py", "flows/test_server_faults.py",
    "flows/test_sweep.py", "flows/test_prefect_server.py", "flows/test_store_integrity.py", "flows/test_train_flow.py",
    "flows/test_cli.py", "flows/test_own_model.py", "flows/test_tune.py", "flows/test_retrain.py",
    "flows/test_data_cache_faults.py", "flows/test_train_resume.py", "flows/test_cluster.py", "flows/test_runs_cli.py",
    "flows/test_mlflow_ui.py", "components/test_train.py",
)  # fmt: skip


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files of :data:`LONGEST_FIRST` first, in that order; the rest as collected."""
    here = Path(__file__).parent
    rank = {here / name: position for position, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path, len(rank)))


@pytest.fixture(scope="module", autouse=True)
def _module_environment():
    """Each test module starts with the environment the worker had: a module fixture's
    ``mlflow.set_tracking_uri`` exports ``MLFLOW_TRACKING_URI`` (for child processes), and the
    next module on the same worker, and every command it starts, would otherwise log there."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(autouse=True)
def _attnlab_loggers_enabled() -> None:
    """Each test starts with attnlab's loggers enabled, as in a fresh process: Prefect's logging
    set-up, run by a flow test earlier in the same worker, disables every logger that exists by
    then (``disable_existing_loggers``)."""
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if name.startswith("attnlab") and isinstance(logger, logging.Logger):
            logger.disabled = False


@pytest.fixture
def read_only_folder(tmp_path: Path):
    """An empty folder nothing can be written into, even by root (permission bits do not stop
    root): a small tmpfs mounted read-only, unmounted afterwards. Without root, a folder with
    mode 0o555. Skipped where root may not mount."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(folder)], check=False, capture_output=True).returncode:
        pytest.skip("a read-only folder for root needs mount (a read-only tmpfs), which is not allowed here")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@pytest.fixture
def make_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Put a tiny installed distribution on sys.path: modules plus entry points, as a third party
    would ship them. Returns a function (name, entry_points, modules) -> its folder."""

    def make(name: str, entry_points: dict[str, dict[str, str]], modules: dict[str, str]) -> Path:
        root = tmp_path / f"site-{name}"
        root.mkdir()
        for filename, source in modules.items():
            (root / filename).write_text(textwrap.dedent(source))
        info = root / f"{name.replace('-', '_')}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        lines = []
        for group, eps in entry_points.items():
            lines.append(f"[{group}]")
            lines.extend(f"{ep} = {target}" for ep, target in eps.items())
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        monkeypatch.syspath_prepend(str(root))
        return root

    yield make
    for module in [m for m in sys.modules if m.startswith("thirdparty_")]:
        del sys.modules[module]
