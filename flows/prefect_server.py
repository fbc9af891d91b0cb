"""Prefect's temporary local API server, started early and in its own session.

Without ``PREFECT_API_URL`` a flow run starts a temporary server subprocess (~5 s here) in the
caller's process group. Two things go wrong for a CLI: the start-up is paid serially after all
imports, and Ctrl-C in the terminal reaches the server too, so Prefect cannot record the crash and
retries for a minute before printing a traceback. :func:`start_in_background` starts the same
server (Prefect's own class and command line) in a new session, booting while the CLI does its
other start-up work, and registers it as the process's ephemeral server, which
Prefect's client then reuses. It is stopped at exit as usual.

Nothing happens when an API URL is configured (a real server, or the test harness) or when this
Prefect version lacks the hook; Prefect then behaves as usual.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from typing import Iterator


def _server_class():
    import prefect
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import get_current_settings

    class DetachedServer(SubprocessASGIServer):
        """Prefect's SubprocessASGIServer, with the subprocess in a new session."""

        def _run_uvicorn_command(self) -> subprocess.Popen:
            # The same command and environment as SubprocessASGIServer._run_uvicorn_command.
            env = {
                **os.environ,
                "PREFECT_UI_ENABLED": "0",
                "PREFECT__SERVER_EPHEMERAL": "1",
                "PREFECT__SERVER_FINAL": "1",
                **get_current_settings().to_environment_variables(exclude_unset=True),
            }
            command = [
                sys.executable, "-m", "uvicorn",
                "--app-dir", str(prefect.__module_path__.parent),
                "--factory", "prefect.server.api.server:create_app",
                "--host", "127.0.0.1", "--port", str(self.port),
                "--log-level", "error", "--lifespan", "on",
            ]  # fmt: skip
            return subprocess.Popen(command, env=env, start_new_session=True)

    return DetachedServer


def _wanted() -> bool:
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    return not settings.api.url and bool(settings.server.ephemeral.enabled)


def start_in_background() -> threading.Thread | None:
    """Start the detached server on a daemon thread (join it before the first flow run); None
    when Prefect has an API URL or the hook is missing. Imports happen in the calling thread (no
    concurrent imports); a failed start is ignored, the flow run then starts Prefect's usual
    server itself."""
    try:
        if not _wanted():
            return None
        server = _server_class()()  # registered as the default (port None) instance
    except Exception:  # noqa: BLE001  an optimisation only
        return None

    def start() -> None:
        try:
            server.start()
        except Exception:  # noqa: BLE001
            pass

    thread = threading.Thread(target=start, name="prefect-server-start", daemon=True)
    thread.start()
    return thread


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
        try:
            from prefect.server.api.server import SubprocessASGIServer
        except ImportError:
            return None
        server = SubprocessASGIServer._instances.get(None)
        if server is None or not server.running:
            return None
        url = server.api_url
    os.environ["PREFECT_API_URL"] = str(url)
    return str(url)
