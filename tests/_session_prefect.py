"""One temporary Prefect server for a whole test run, shared by its xdist workers.

The first worker that needs it starts it under a file lock in the run's folder and records its
address and pid there; the others read the record. It outlives the worker that started it (a
worker leaves once its files are done, while others still run), so the run's pytest stops it at
the end (:func:`stop`), and the run's reaper ends it if pytest dies. One server instead of one per
worker: each costs about 6 CPU-s to start and 20-30 CPU-s idling through a run of the suite.

Its database as its start left it is kept as the run's template (:func:`seed_home`): the
temporary servers that the commands the tests start run in their Prefect homes skip Prefect's
migrations of a new database, 8 CPU-s each.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import sys
from pathlib import Path

#: The run's folder, shared by its workers (set by _testrun.py).
ROOT_VARIABLE = "ATTNLAB_TEST_ROOT"
#: Longest wait for the server to answer (a hang guard for a very busy machine).
STARTUP_TIMEOUT = 600
#: Starts tried when the server exits before answering (its port taken meanwhile).
STARTS = 3
#: ``python -c`` this, then a module and its arguments: ``python -m`` that module, collecting
#: garbage at the pace of the servers attnlab starts (attnlab.ops.collector).
AT_ATTNLABS_PACE = (
    "import runpy, sys\n"
    "from attnlab.ops.collector import collect_less_often\n"
    "collect_less_often()\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)"
)


def _folder() -> Path:
    return Path(os.environ[ROOT_VARIABLE]) / "prefect-server"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(folder: Path) -> tuple[str, int]:
    """Start the server (the command of Prefect's own test harness, in a session of its own, its
    database in ``folder``); (its API address, its pid) once it answers. Imports no Prefect: the
    workers import it only once the address is set."""
    from attnlab.flows.services.prefect_server import SERVER_SETTINGS, uvicorn_command
    from attnlab.flows.services.servers import Server, ServerFailed, ServerTimeout, wait_healthy

    env = {**os.environ, **SERVER_SETTINGS, "PREFECT_SERVER_DATABASE_CONNECTION_URL": f"sqlite+aiosqlite:///{folder / 'prefect.db'}"}
    for attempt in range(1, STARTS + 1):
        port = _free_port()
        url = f"http://127.0.0.1:{port}/api"
        server = Server(
            "Prefect", [sys.executable, "-c", AT_ATTNLABS_PACE, *uvicorn_command(port)], f"{url}/health", folder / "server.log", env
        ).start()
        try:
            wait_healthy([server], timeout=STARTUP_TIMEOUT)
        except ServerTimeout:
            server.stop()
            raise
        except ServerFailed:
            if attempt < STARTS:
                continue  # its port was taken meanwhile: another port
            raise
        return url, server.process.pid  # type: ignore[union-attr]  (started)


def api_url() -> str:
    """The address of the run's Prefect server (``http://127.0.0.1:PORT/api``), started first if
    no worker has started it yet."""
    from filelock import FileLock

    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / "server.json"
    with FileLock(folder / "server.lock"):
        if not record.is_file():
            url, pid = _start(folder)
            _keep_template(folder)
            record.write_text(json.dumps({"api_url": url, "pid": pid}))
        return json.loads(record.read_text())["api_url"]


def _keep_template(folder: Path) -> None:
    """Copy the server's database as its start left it (migrated to Prefect's schema, no flow run
    yet) to ``template.db`` beside it, for :func:`seed_home`."""
    with (
        contextlib.closing(sqlite3.connect(folder / "prefect.db")) as database,
        contextlib.closing(sqlite3.connect(folder / "template.db")) as copy,
    ):
        database.backup(copy)


def seed_home(home: Path) -> Path:
    """``home`` as a Prefect home whose database (``prefect.db``, where a temporary server keeps
    it) is a copy of the run's migrated template, unless it has one: a temporary server started
    there skips Prefect's migrations of a new database (13 CPU-s to start instead of 5). The run's
    server must have started (:func:`api_url`)."""
    home.mkdir(parents=True, exist_ok=True)
    database = home / "prefect.db"
    if not database.exists():
        shutil.copyfile(_folder() / "template.db", database)
    return home


def stop() -> None:
    """Stop the run's Prefect server, if one was started (by the run's pytest, at its end)."""
    import psutil

    record = _folder() / "server.json"
    if not record.is_file():
        return
    pid = json.loads(record.read_text())["pid"]
    try:
        server = psutil.Process(pid)
        if "prefect.server.api.server:create_app" not in server.cmdline():
            return  # it died and its pid was reused
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)
    except psutil.TimeoutExpired:
        server.kill()
    except psutil.Error:
        pass  # already gone
    record.unlink()
