"""Helpers of the flow and CLI tests (imported by basename: tests/flows is on sys.path)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: Trains in well under a second; learns nothing. For plumbing tests: no explanations (their
#: attributions of an untrained model's long outputs cost ~2 CPU-s a run; the tests of them ask).
TINY = dict(train_size=200, validation_size=50, test_size=50, embedding_dim=16, hidden_size=16, epochs=2, explain_examples=0)
#: Learns the date task to ~100% test exact match in ~1-2 s (3 epochs at most, CPU, seed 0).
LEARNS = dict(train_size=1500, validation_size=100, test_size=100, hidden_size=64, epochs=3, target_exact_match=0.98)
#: Inputs the LEARNS model gets right, with their answers.
KNOWN_DATES = {"25-12-2023": "2023年12月25日", "01-01-2000": "2000年01月01日", "14-07-2015": "2015年07月14日"}


def preloaded_processes() -> multiprocessing.context.BaseContext:
    """A multiprocessing context whose processes are forked from a server process that imported
    torch, MLflow and a run's steps once: a sweep's worker processes
    (:func:`attnlab.flows.sweep.worker_pool.worker_context`; one server a process, so the tests
    share it with the sweeps they run in-process). Each is a process of its own, with its own
    pid, database connections and store, that does not pay 3-5 CPU-s importing them again."""
    from attnlab.flows.sweep.worker_pool import worker_context

    return worker_context()


def untrained_bundle(folder: Path) -> Path:
    """An untrained tiny date model (hidden and embedding size 7, seed 42) saved as a bundle in
    ``folder``."""
    import torch

    from attnlab.lab.config import ExperimentConfig
    from attnlab.model.assembly import build_model, build_task
    from attnlab.model.bundle import save_bundle

    torch.manual_seed(42)
    config = ExperimentConfig(hidden_size=7, embedding_dim=7)
    return save_bundle(folder, config, build_model(config, build_task(config)))


def point_at(store_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make ``store_dir`` the embedded MLflow store of this process."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("ATTNLAB_MLFLOW_DIR", str(store_dir))
    return store_dir


def run_flow(store_dir: Path, **config) -> dict:
    """Run the train flow against ``store_dir``, checked first as the command and the Python API
    check it (a new store is laid from the migrated schema copy, not migrated: 0.9 CPU-s); its
    summary."""
    from attnlab.flows.run.train_flow import train_flow
    from attnlab.flows.tracking.store import check_store, resolve_store
    from attnlab.lab.config import ExperimentConfig

    with pytest.MonkeyPatch.context() as patch:
        point_at(store_dir, patch)
        check_store(resolve_store())
        return train_flow(ExperimentConfig(**config))


def client_for(store_dir: Path):
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{store_dir / 'mlflow.db'}")


def is_phase_line(line: str) -> bool:
    """Whether ``line`` is one of the lines a long phase says while it goes on
    (:func:`attnlab.training.phase_lines.still_line`), which a busy machine may print before anything."""
    from attnlab.training.phase_lines import PHASES

    head, _, tail = line.partition(": ")
    return head in PHASES.values() and tail.endswith(" s so far")


def is_progress_line(line: str) -> bool:
    """Whether ``line`` is one of a train command's progress lines on stderr (its start, its
    benchmark, the threads it takes on a busy machine, its epochs, a long phase going on), none of
    them an error."""
    starts = ("training ", "resuming run ", "benchmark of ", "busy machine (", "epoch ")
    return line.startswith(starts) or is_phase_line(line)


def assert_one_line_error(err: str, *needles: str) -> None:
    """stderr is exactly one 'attnlab: error: ...' line containing every needle (after any
    phase lines: a slow start on a busy machine says that it goes on)."""
    lines = [line for line in err.splitlines() if line.strip() and not is_phase_line(line)]
    assert len(lines) == 1, err
    assert lines[0].startswith("attnlab: error: "), err
    assert "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


class Burners:
    """Every core saturated before the command adds its own load: a busy loop per core that the
    machine's other work leaves idle, measured over a second (2 on a quiet machine of 2 cores;
    none while the suite's other workers keep both busy, when more loops would only slow the
    suite). A loop ends by itself once the process that started it is gone."""

    def __enter__(self):
        from attnlab.ops.threads import busy_cores, usable_cores

        cores = usable_cores()
        busy = busy_cores(cores, seconds=1.0)
        count = cores if busy is None else max(0, round(cores - busy))
        loop = [sys.executable, "-c", f"import os\nwhile os.getppid() == {os.getpid()}: pass"]
        self.processes = [subprocess.Popen(loop) for _ in range(count)]
        return self

    def __exit__(self, *exc_info):
        for process in self.processes:
            process.kill()
            process.wait()


class TrainProcess:
    """A real ``attnlab train`` process with environment ``env`` in folder ``cwd``; its stderr read
    line by line into ``lines``, ``epoch_one`` set once the first epoch's line (or, with
    ``whole_epoch``, its end-of-epoch line rather than a step line) is printed."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path, whole_epoch: bool = False):
        attnlab = str(Path(sys.executable).with_name("attnlab"))
        self.process = subprocess.Popen(
            [attnlab, "train", *args], env=env, cwd=cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.whole_epoch = whole_epoch
        self.lines: list[str] = []
        self.epoch_one = threading.Event()
        self._news = threading.Event()  # the first epoch's line, or the end of stderr (the process exited)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("epoch   1/") and (not self.whole_epoch or " train_loss " in line and "step" not in line):
                self.epoch_one.set()
                self._news.set()
        self._news.set()

    def reached_epoch_one(self, timeout: float = 600) -> bool:
        """Whether the first epoch's line came: waits for it, or for the process to close its
        stderr before it (it ended), ``timeout`` s at most (only a hang guard)."""
        self._news.wait(timeout)
        return self.epoch_one.is_set()

    def wait(self, timeout: float) -> int:
        """Its exit status; kills it and fails the test when it runs longer than ``timeout``."""
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            pytest.fail(f"attnlab train still running {timeout:.0f} s later; stderr so far:\n" + "\n".join(self.lines[-20:]))
        self.reader.join(10)
        return code

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)


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


def spelled_words(count: int, seed: int = 0) -> str:
    """CSV text (columns word, spelled) of ``count`` distinct words over a-e, each with its letters
    spelled out as whitespace-separated tokens: a small file for the pairs task."""
    import random

    names = {"a": "AY", "b": "BEE", "c": "SEE", "d": "DEE", "e": "EE"}
    rng, words = random.Random(seed), set()
    while len(words) < count:
        words.add("".join(rng.choice("abcde") for _ in range(rng.randint(2, 7))))
    return "word,spelled\n" + "".join(f"{w},{' '.join(names[c] for c in w)}\n" for w in sorted(words))


def terminal_popen(command: list[str], **kwargs) -> subprocess.Popen:
    """``subprocess.Popen(command, **kwargs)`` started with Ctrl-C at its default disposition, as
    a command typed in a terminal starts: a child inherits an ignored SIGINT (SIG_IGN survives
    exec), and the test process may be ignoring it at that moment."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(command, **kwargs)
    finally:
        signal.signal(signal.SIGINT, previous)


# --------------------------------------------------------------------------- servers over HTTP


def free_port() -> int:
    """A port of 127.0.0.1 free at the time of asking."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def post(url: str, data: bytes, timeout: float) -> tuple[int, str]:
    """(HTTP status, body) of a JSON POST of ``data`` to ``url``."""
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def wait_until(condition, timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; ``timeout`` is a hang guard, not a speed target."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout} s"
        time.sleep(0.1)


def mlflow_server_command(port: int, folder: Path) -> list[str]:
    """A real ``mlflow server`` on 127.0.0.1:``port`` whose SQLite backend (``server.db``) and
    artifacts are in ``folder``. A new database is laid from the migrated empty copy, as attnlab
    lays its own stores (:func:`attnlab.flows.tracking.store_schema.lay_new_database`): MLflow then
    skips its ~70 migrations (1 CPU-s of the server's 7 to start); an existing one is kept (a
    server started again on the same store)."""
    from attnlab.flows.tracking.store_schema import lay_new_database

    database = folder / "server.db"
    if not database.exists():
        lay_new_database(database)
    return [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
            "--backend-store-uri", f"sqlite:///{database}", "--artifacts-destination", str(folder / "artifacts")]  # fmt: skip


def server_answers(url: str, server: subprocess.Popen) -> bool:
    """True once ``url`` answers 200; fails the test when ``server`` exited first."""
    assert server.poll() is None, f"the server exited with status {server.returncode}"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def stop_group(server: subprocess.Popen) -> None:
    """SIGKILL ``server``'s process group (started with a session of its own) and reap it."""
    try:
        os.killpg(server.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    server.wait()
