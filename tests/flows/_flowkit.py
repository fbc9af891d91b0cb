"""Helpers of the flow and CLI tests (imported by basename: tests/flows is on sys.path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

#: Trains in well under a second; learns nothing. For plumbing tests.
TINY = dict(train_size=200, validation_size=50, test_size=50, embedding_dim=16, hidden_size=16, epochs=2)
#: Learns the date task to ~100% test exact match in ~1-2 s (3 epochs at most, CPU, seed 0).
LEARNS = dict(train_size=1500, validation_size=100, test_size=100, hidden_size=64, epochs=3, target_exact_match=0.98)
#: Inputs the LEARNS model gets right, with their answers.
KNOWN_DATES = {"25-12-2023": "2023年12月25日", "01-01-2000": "2000年01月01日", "14-07-2015": "2015年07月14日"}


def point_at(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make ``store_dir`` the embedded MLflow store of this process."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    return store_dir


def run_flow(store_dir: Path, **config) -> dict:
    """Run the train flow against ``store_dir``; its summary."""
    from attnlab.config import ExperimentConfig
    from attnlab.flows.train_flow import train_flow

    with pytest.MonkeyPatch.context() as patch:
        point_at(store_dir, patch)
        return train_flow(ExperimentConfig(**config))


def client_for(store_dir: Path):
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{store_dir / 'mlflow.db'}")


def assert_one_line_error(err: str, *needles: str) -> None:
    """stderr is exactly one 'attnlab: error: ...' line containing every needle."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("attnlab: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


class Burners:
    """A busy loop per core: every core saturated before the command adds its own load."""

    def __enter__(self):
        count = os.cpu_count() or 1
        self.processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
        return self

    def __exit__(self, *exc_info):
        for process in self.processes:
            process.kill()
            process.wait()


CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]  # fmt: skip


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must run the browser tests (make setup installs chromium and playwright)")
    pytest.skip(f"{reason}: the browser tests need it (make setup installs it)")


@contextmanager
def chromium() -> Iterator:
    """A headless Debian chromium driven by Playwright (never a downloaded browser); skipped
    without either, except under CI (env CI set), where that is a failure. While it is open,
    Playwright's event loop runs in this thread, and Prefect's sync calls (run_deployment, ...)
    then return coroutines: keep it open only around the browser's own work."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed")
    executable = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(executable).exists():
        _unavailable("chromium is not installed")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
