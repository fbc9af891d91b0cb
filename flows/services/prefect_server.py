"""Prefect's temporary local API server, owned by the command that needs it.

Without ``PREFECT_API_URL`` a flow run starts a temporary server subprocess itself, which for a CLI
goes wrong in several ways: the start-up (~5 s quiet, a minute or more on a loaded machine) is paid
after all imports; its 20 s start-up bound fails on a busy machine while the half-started server
stays registered on its port, so the next start binds the same port again; Ctrl-C in the terminal
reaches the server too; and a command killed with SIGKILL leaves it running.

:func:`start_in_background` starts the same server (Prefect's app and uvicorn command line, as
Prefect's ``SubprocessASGIServer`` runs it) instead, so that:

- it is launched before the command imports torch, Prefect or MLflow (launching imports none of
  them) and boots on the other core while the command does the rest of its start-up;
  :meth:`Handle.wait` waits for it as long as a loaded machine needs (``STARTUP_SECONDS``, or
  ``PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS`` when set), then fails in one line, having
  stopped the process it started;
- once it answers, it is this process's Prefect API: :meth:`Handle.wait` exports its URL as
  ``PREFECT_API_URL`` and refreshes Prefect's global settings, so Prefect's client (in every
  thread) and the worker processes this command starts use it and never start another;
- it runs in its own session, out of reach of the terminal's Ctrl-C, under
  :mod:`attnlab.flows.services.server_child`, which ends it when this process is gone, however it ended;
- its output goes to ``<cache>/logs/prefect-server.log``, not the terminal (uvicorn prints a
  traceback when stopped mid-request).

Nothing happens when an API URL is configured (a real server, or the test harness); Prefect then
behaves as usual.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from attnlab.flows.services.servers import healthy
from attnlab.lab.errors import UserError

#: How long a start-up may take unless PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS says:
#: ~5 s on a quiet 2-core machine; 60-120 s were seen at a load average of 20-28.
STARTUP_SECONDS = 300.0
#: uvicorn's exit status when it cannot bind its port (then another port is tried).
PORT_TAKEN = 3
#: How long a stopped server may take to end before it is killed.
STOP_SECONDS = 10.0


class ServerStartFailed(UserError):
    """Prefect's temporary server did not answer in time, or exited."""


def log_path() -> Path:
    from attnlab.data.cache import cache_root

    return cache_root() / "logs" / "prefect-server.log"


def startup_seconds() -> float:
    """The start-up bound: the user's PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, else ours."""
    value = os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "").strip()
    try:
        return float(value) if value else STARTUP_SECONDS
    except ValueError:
        return STARTUP_SECONDS


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _prefect_wants_one() -> bool:
    """Whether Prefect, as configured (environment, profile, test harness), has no API URL and may
    start a temporary server. Imports Prefect's settings (~1 s): called once they are imported."""
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    return not settings.api.url and bool(settings.server.ephemeral.enabled)


#: The environment Prefect's SubprocessASGIServer._run_uvicorn_command gives its server.
SERVER_SETTINGS = {"PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1", "PREFECT__SERVER_FINAL": "1"}


def uvicorn_command(port: int) -> list[str]:
    """Prefect's API app under uvicorn on 127.0.0.1:``port`` (``uvicorn`` and its arguments, to
    run with ``python -m``): the command line of Prefect's SubprocessASGIServer. Prefect is found
    without importing it."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("Prefect is not installed", name="prefect")
    prefect_dir = Path(spec.submodule_search_locations[0])
    return [
        "uvicorn", "--app-dir", str(prefect_dir.parent), "--factory", "prefect.server.api.server:create_app",
        "--host", "127.0.0.1", "--port", str(port), "--log-level", "error", "--lifespan", "on",
    ]  # fmt: skip


class Handle:
    """A temporary server starting in the background; :meth:`wait` before the first flow run."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.error: BaseException | None = None
        self._launch()
        atexit.register(self.stop)
        self.thread = threading.Thread(target=self._wait_healthy, name="prefect-server-start", daemon=True)
        self.thread.start()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def _launch(self) -> None:
        """Start the server process on a free port (returns at once; imports nothing heavy)."""
        self.port = _free_port()
        path = log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(SERVER_SETTINGS)
        command = [sys.executable, "-m", "attnlab.flows.services.server_child", str(os.getpid()), *uvicorn_command(self.port)]
        with open(path, "ab") as log:
            self.process = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def _wait_healthy(self) -> None:
        """Return once /api/health answers 200; keep ServerStartFailed after the start-up bound or
        when the process exits (another port is tried when its port was taken meanwhile)."""
        seconds = startup_seconds()
        deadline = time.monotonic() + seconds
        try:
            while True:
                process = self.process
                if process is None:  # stopped meanwhile
                    return
                code = process.poll()
                if code == PORT_TAKEN:
                    self._launch()
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
                time.sleep(0.1)
        except BaseException as exc:  # noqa: BLE001  re-raised by wait()
            self.error = exc

    def wait(self) -> bool:
        """Return once the server answers, made this process's Prefect API (True); False, the
        server stopped, when Prefect turns out to have an API URL of its own (a profile's, the test
        harness's). Else stop it and raise ServerStartFailed (one line)."""
        if not _prefect_wants_one():
            self.stop()
            return False
        self.thread.join()
        if self.error is not None:
            self.stop()
            raise self.error if isinstance(self.error, UserError) else ServerStartFailed(str(self.error))
        from prefect.context import refresh_global_settings_context

        os.environ["PREFECT_API_URL"] = self.api_url  # the worker processes this command starts too
        refresh_global_settings_context()
        return True

    def stop(self) -> None:
        """End the server (SIGTERM: uvicorn's graceful shutdown; SIGKILL after STOP_SECONDS)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_SECONDS)
        except (subprocess.TimeoutExpired, KeyboardInterrupt):  # or a second Ctrl-C while it shuts down
            process.kill()
            process.wait()


_started: Handle | None = None


def start_in_background() -> Handle | None:
    """Launch Prefect's temporary server (see the module docstring); None when Prefect has an API
    URL or this process has one running already. When Prefect is not imported yet only the
    environment's ``PREFECT_API_URL`` is looked at, so that launching imports nothing heavy;
    :meth:`Handle.wait` then checks Prefect's whole configuration."""
    global _started
    if os.environ.get("PREFECT_API_URL") or (_started is not None and _started.process is not None):
        return None
    if "prefect.settings" in sys.modules and not _prefect_wants_one():
        return None
    _started = Handle()
    return _started


@contextlib.contextmanager
def without_heartbeats() -> Iterator[None]:
    """Flow-run heartbeats tell a long-lived Prefect server that a run is alive; a temporary
    server dies with this process anyway, and the heartbeat thread adds up to 1 s to the end of
    every flow run (it sleeps in 1 s steps and is joined)."""
    try:
        from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

        context: contextlib.AbstractContextManager[object] = temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
    except Exception:  # noqa: BLE001  an optimisation only
        context = contextlib.nullcontext()
    with context:
        yield


def share_with_workers() -> str | None:
    """Export the Prefect API this process uses as ``PREFECT_API_URL``, so the worker processes
    it starts (a process pool, a local Dask cluster) use the same server instead of each starting
    its own temporary one (~10-45 s apiece, and their runs would not show up here). The URL, or
    None when there is none."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if url:
        os.environ["PREFECT_API_URL"] = str(url)
    return str(url) if url else None
