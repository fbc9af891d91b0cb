"""The temporary Prefect server a command starts for itself: it waits as long as a loaded machine
needs, is the process's one server, prints nothing, and never outlives its command (even one
killed with SIGKILL). Real processes, a real load generator."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psutil
import pytest
from _flowkit import TINY, Burners, assert_one_line_error

ATTNLAB = str(Path(sys.executable).with_name("attnlab"))
TINY_ARGS = [f"-o{key}={value}" for key, value in {**TINY, "epochs": 1}.items()]


def command_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A user's environment: no Prefect API URL (so the command starts its own server), a store
    and a cache folder of its own (the cache path marks every process the command starts)."""
    env = {**os.environ, "ATTNLAB_MLFLOW_DIR": str(tmp_path / "mlflow"), "ATTNLAB_CACHE_DIR": str(tmp_path / "cache"), **extra}
    for name in ("PREFECT_API_URL", "MLFLOW_TRACKING_URI"):
        env.pop(name, None)
    return env


def started_by(tmp_path: Path) -> list[psutil.Process]:
    """Every live process whose environment carries this test's cache folder."""
    marker = str(tmp_path / "cache")
    found = []
    for process in psutil.process_iter():
        try:
            if process.environ().get("ATTNLAB_CACHE_DIR") == marker:
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


@pytest.mark.slow
def test_train_on_saturated_cpus_finishes_quietly_and_leaves_no_process(tmp_path):
    with Burners():
        done = subprocess.run([ATTNLAB, "train", *TINY_ARGS], env=command_env(tmp_path), cwd=tmp_path,
                              capture_output=True, text=True, timeout=900)  # fmt: skip  # a hang guard only
    assert done.returncode == 0, done.stderr[-3000:]
    for noise in ("Traceback", "Timed out", "address already in use", "Reactive triggers"):
        assert noise not in done.stderr + done.stdout
    assert started_by(tmp_path) == []  # the server (and anything else it started) ended with it


@pytest.mark.slow
def test_a_command_killed_with_sigkill_takes_its_prefect_server_with_it(tmp_path):
    options = [f"-o{key}={value}" for key, value in {**TINY, "epochs": 500, "target_exact_match": "null"}.items()]
    process = subprocess.Popen([ATTNLAB, "train", *options], env=command_env(tmp_path), cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    seen = []
    while not any(line.startswith("epoch   1/") for line in seen):  # the event: its flow runs on the server
        line = process.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    servers = [p for p in started_by(tmp_path) if "prefect.server.api.server:create_app" in p.cmdline()]
    assert len(servers) == 1, [p.cmdline() for p in servers]  # one server per process
    threading.Thread(target=process.stderr.read, daemon=True).start()  # keep its pipe drained
    process.send_signal(signal.SIGKILL)
    process.wait()
    gone, alive = psutil.wait_procs(servers, timeout=120)  # a hang guard: it ends within ~1 s
    assert alive == [], [p.cmdline() for p in alive]


@pytest.mark.slow
def test_a_server_that_cannot_start_in_time_is_one_line_and_stopped(tmp_path):
    env = command_env(tmp_path, PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")
    done = subprocess.run([ATTNLAB, "train", *TINY_ARGS], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and done.stdout == ""
    assert_one_line_error(done.stderr, "Prefect's temporary API server did not answer within 1 s",
                          "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "attnlab server")  # fmt: skip
    assert started_by(tmp_path) == []


def test_launching_the_server_imports_neither_prefect_nor_torch_nor_mlflow(tmp_path):
    """The server is launched before the command's heavy imports, so that it boots meanwhile."""
    script = (
        "import sys\n"
        "from attnlab.flows.services.prefect_server import start_in_background\n"
        "handle = start_in_background()\n"
        "print(handle is not None, sorted(m for m in ('prefect', 'torch', 'mlflow') if m in sys.modules))\n"
        "handle.stop()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=command_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "[]"]
    assert started_by(tmp_path) == []


def test_a_server_launched_where_prefect_has_an_api_url_of_its_own_is_stopped_unused(tmp_path, monkeypatch):
    """Prefect's API URL can come from a profile or the test harness (this session's), not only
    the environment: the launched server is then stopped and Prefect's own API kept."""
    from prefect.settings import get_current_settings

    from attnlab.flows.services import prefect_server

    monkeypatch.setenv("ATTNLAB_CACHE_DIR", str(tmp_path / "cache"))
    configured = get_current_settings().api.url
    assert configured  # the session's harness
    assert prefect_server.start_in_background() is None  # Prefect is imported: its settings say so
    handle = prefect_server.Handle()
    process = psutil.Process(handle.process.pid)
    assert handle.wait() is False
    assert not process.is_running() or process.status() == psutil.STATUS_ZOMBIE
    assert get_current_settings().api.url == configured and os.environ.get("PREFECT_API_URL") != handle.api_url
