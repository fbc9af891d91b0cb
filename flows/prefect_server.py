"""Prefect's temporary local API server, owned by the command that needs it.

Without ``PREFECT_API_URL`` a flow run starts a temporary server subprocess itself, which for a CLI
goes wrong in several ways: the start-up (~5 s quiet, a minute or more on a loaded machine) is paid
after all imports; its 20 s start-up bound fails on a busy machine while the half-started server
stays registered on its port, so the next start binds the same port again; Ctrl-C in the terminal
reaches the server too; and a command killed with SIGKILL leaves it running.

:func:`start_in_background` starts the same server (Prefect's own class, app and uvicorn command
line) instead, so that:

- it boots while the command does its other start-up work, and :meth:`Handle.wait`
  waits for it as long as a loaded machine needs (``STARTUP_SECONDS``, or
  ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS`` when set), then fails in one line, having
  stopped the process it started;
- it is the process's one registered ephemeral server: Prefect's client reuses it and never
  starts another;
- it runs in its own session, out of reach of the terminal's Ctrl-C, under
  :mod:`attnlab.flows.server_child`, which ends it when this process is gone, however it ended;
- its output goes to ``<cache>/logs/prefect-server.log``, not the terminal (uvicorn prints a
  traceback when stopped mid-request).

Nothing happens when an API URL is configured (a real server, or the test harness); Prefect then
behaves as usual.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

from attnlab.errors import UserError
from attnlab.flows.servers import healthy

#: How long a start-up may take unless PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS says:
#: ~5 s on a quiet 2-core machine; 60-120 s were seen at a load average of 20-28.
STARTUP_SECONDS = 300.0
#: uvicorn's exit status when it cannot bind its port (then another port is tried).
PORT_TAKEN = 3


class ServerStartFailed(UserError):
    """Prefect's temporary server did not answer in time, or exited."""


def log_path() -> Path:
    from attnlab.cache import cache_root

    return cache_root() / "logs" / "prefect-server.log"


def startup_seconds() -> float:
    """The start-up bound: the user's PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, else ours."""
    value = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "").strip()
    try:
        return float(value) if value else STARTUP_SECONDS
    except ValueError:
        return STARTUP_SECONDS


def _server_class():
    import prefect
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    class TemporaryServer(SubprocessASGIServer):
        """Prefect's SubprocessASGIServer, started by this module: see the module docstring."""

        def launch(self) -> None:
            """Start the server process on a free port (returns at once)."""
            self.port = self.find_available_port()
            path = log_path()
            path.parent.mkdir(parents=True, exist_ok=True)
            env = {
                **os.environ,
                # The same command and environment as SubprocessASGIServer._run_uvicorn_command.
                "PREFECT_UI_ENABLED": "0",
                "PREFECT__SERVER_EPHEMERAL": "1",
                "PREFECT__SERVER_FINAL": "1",
                **get_current_settings().to_environment_variables(exclude_unset=True),
            }
            command = [
                sys.executable, "-m", "attnlab.flows.server_child", str(os.getpid()), "uvicorn",
                "--app-dir", str(prefect.__module_path__.parent),
                "--factory", "prefect.server.api.server:create_app",
                "--host", "127.0.0.1", "--port", str(self.port),
                "--log-level", "error", "--lifespan", "on",
            ]  # fmt: skip
            with open(path, "ab") as log:
                self.server_process = subprocess.Popen(
                    command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
                )

        def wait_healthy(self, seconds: float) -> None:
            """Return once /api/health answers 200; raise ServerStartFailed after ``seconds`` or
            when the process exits (another port is tried when its port was taken meanwhile)."""
            deadline = time.monotonic() + seconds
            while True:
                code = self.server_process.poll()
                if code == PORT_TAKEN:
                    self.launch()
                    continue
                if code is not None:
                    raise ServerStartFailed(
                        f"Prefect's temporary API server exited with status {code} while starting (its log: {log_path()})"
                    )
                if healthy(f"{self.api_url}/health", timeout=5):
                    return
                if time.monotonic() > deadline:
                    raise ServerStartFailed(
                        f"Prefect's temporary API server did not answer within {seconds:.0f} s (load average "
                        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; its log: {log_path()}); set "
                        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS higher, or run 'attnlab server' "
                        "and export the PREFECT_API_URL it prints"
                    )
                time.sleep(0.2)

        def start(self, timeout: int | None = None) -> None:
            """What Prefect's client calls: the server is already started (or the command failed)."""
            if not self.running:
                raise ServerStartFailed("Prefect's temporary API server is not running")

    return TemporaryServer


def _wanted() -> bool:
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    return not settings.api.url and bool(settings.server.ephemeral.enabled)


class Handle:
    """A temporary server starting in the background; :meth:`wait` before the first flow run."""

    def __init__(self, server) -> None:
        self.server = server
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._wait, name="prefect-server-start", daemon=True)
        self.thread.start()

    def _wait(self) -> None:
        try:
            self.server.wait_healthy(startup_seconds())
            self.server.running = True
        except BaseException as exc:  # noqa: BLE001  re-raised by wait()
            self.error = exc

    def wait(self) -> None:
        """Return once the server answers; else stop it and raise ServerStartFailed (one line)."""
        self.thread.join()
        if self.error is not None:
            self.server.stop()
            raise self.error if isinstance(self.error, UserError) else ServerStartFailed(str(self.error))


def start_in_background() -> Handle | None:
    """Start Prefect's temporary server (see the module docstring); None when Prefect has an API
    URL. The process starts in the calling thread, a daemon thread waits for it to answer."""
    if not _wanted():
        return None
    import atexit

    from prefect.server.api.server import SubprocessASGIServer

    existing = SubprocessASGIServer._instances.get(None)
    if existing is not None and existing.running:
        return None  # this process has one already
    SubprocessASGIServer._instances.pop(None, None)
    server = _server_class()()  # registered as the process's default (port None) instance
    server.launch()
    atexit.register(server.stop)
    return Handle(server)


@contextlib.contextmanager
def without_heartbeats() -> Iterator[None]:
    """Flow-run heartbeats tell a long-lived Prefect server that a run is alive; a temporary
    server dies with this process anyway, and the heartbeat thread adds up to 1 s to the end of
    every flow run (it sleeps in 1 s steps and is joined)."""
    try:
        from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

        context = temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
    except Exception:  # noqa: BLE001  an optimisation only
        context = contextlib.nullcontext()
    with context:
        yield


def share_with_workers() -> str | None:
    """Export the Prefect API this process uses as ``PREFECT_API_URL``, so the worker processes
    it starts (a process pool, a local Dask cluster) use the same server instead of each starting
    its own temporary one (~10-45 s apiece, and their runs would not show up here). The URL, or
    None when there is none yet."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        from prefect.server.api.server import SubprocessASGIServer

        server = SubprocessASGIServer._instances.get(None)
        if server is None or not server.running:
            return None
        url = server.api_url
    os.environ["PREFECT_API_URL"] = str(url)
    return str(url)
