"""Local servers as child processes: start one in its own process group with its output in a log
file, wait until its health URL answers, stop it with all its workers.

Used by ``attnlab server`` (a Prefect server and an MLflow server on 127.0.0.1) and by tests.
Nothing here imports Prefect or MLflow.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

HOST = "127.0.0.1"
#: MLflow's server also starts a job runner and eight huey consumers for its GenAI jobs unless told
#: not to. attnlab uses none of them: without them a server is 2 processes, not 10, and is ready
#: in 7.5 s having used 7.4 CPU-s, not 11.4 s and 25.6 CPU-s (2 cores).
MLFLOW_SERVER_SETTINGS = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def port_free(port: int, host: str = HOST) -> str | None:
    """None when a server can listen on ``host:port`` now, else the reason (e.g. 'Address already
    in use'). Like the servers themselves, the probe sets SO_REUSEADDR: connections of a stopped
    server still in TIME_WAIT do not make a port busy."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


class ServedStore(Protocol):
    """What serving a store needs of it (:class:`attnlab.flows.tracking.store.Store`, which the
    services do not import)."""

    @property
    def tracking_uri(self) -> str: ...

    @property
    def artifact_root(self) -> Path | None: ...


def mlflow_ui_command(store: ServedStore, host: str, port: int) -> list[str]:
    """The ``mlflow server`` command line that serves ``store`` (a :class:`attnlab.flows.tracking.store.Store`)
    and, for the embedded store, its artifacts folder."""
    command = [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", store.tracking_uri]
    root = store.artifact_root  # None for a tracking server
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
        command += ["--default-artifact-root", root.as_uri(), "--no-serve-artifacts"]
    return command + ["--host", host, "--port", str(port), "--workers", "1"]


def mlflow_server_env() -> dict[str, str]:
    """This process's environment with :data:`MLFLOW_SERVER_SETTINGS`, for an ``mlflow server``."""
    return {**os.environ, **MLFLOW_SERVER_SETTINGS}


def prefect_command(port: int, host: str = HOST) -> list[str]:
    """``prefect server start`` on ``host:port`` with this interpreter's Prefect."""
    return [sys.executable, "-m", "prefect", "server", "start", "--host", host, "--port", str(port)]


def healthy(url: str, timeout: float = 2.0) -> bool:
    """True when ``url`` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


@dataclass
class Server:
    """A named server process: ``command``, the URL that answers 200 once it is ready, and the
    file its output goes to."""

    name: str
    command: list[str]
    health_url: str
    log: Path
    env: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Server:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self.command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env=self.env,
            )  # fmt: skip
        return self

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def last_line(self) -> str:
        """The last non-empty line of the log (the likely reason when it died)."""
        try:
            lines = [line.strip() for line in self.log.read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            return ""
        return lines[-1][:300] if lines else ""

    def terminate(self) -> None:
        """SIGTERM to its process group (returns at once)."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM to its process group, SIGKILL after ``grace`` seconds; waits for it."""
        if self.process is not None:
            stop_group(self.process, grace)


def stop_group(process: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """Stop a server started with ``start_new_session=True``: SIGTERM to its process group,
    SIGKILL to whatever is left of the group after ``grace`` seconds; waits for the leader."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    # Anything left in the group (a hung leader, workers that outlived it) goes now.
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def stop_all(servers: list[Server], grace: float = 15.0) -> None:
    """Stop every server, all at once (SIGTERM to each, then wait)."""
    for server in servers:
        server.terminate()
    for server in servers:
        server.stop(grace)


class ServerFailed(RuntimeError):
    """A server exited or did not become healthy in time; the message says which and why."""


class ServerTimeout(ServerFailed):
    """The servers in ``pending`` did not answer within ``timeout`` seconds."""

    def __init__(self, message: str, pending: list[Server], timeout: float):
        super().__init__(message)
        self.pending = pending
        self.timeout = timeout


def wait_healthy(servers: list[Server], timeout: float, on_wait: Callable[[float], None] | None = None) -> None:
    """Return once every server's health URL answers; raise ServerFailed when one exits first,
    ServerTimeout when ``timeout`` seconds pass. ``on_wait(elapsed seconds)`` is called before
    each round of checks while some have not answered."""
    start = time.monotonic()
    pending = list(servers)
    while pending:
        if on_wait is not None:
            on_wait(time.monotonic() - start)
        for server in list(pending):
            code = server.exited()
            if code is not None:
                raise ServerFailed(
                    f"the {server.name} server exited with status {code}: {server.last_line() or 'no output'} (log: {server.log})"
                )
            if healthy(server.health_url):
                pending.remove(server)
        if pending and time.monotonic() - start > timeout:
            names = ", ".join(s.name for s in pending)
            raise ServerTimeout(f"the {names} server did not answer within {timeout:.0f} s (log: {pending[0].log})", pending, timeout)
        if pending:
            time.sleep(0.5)
