"""Run a server command line as a child that ends when the process that started it is gone.

``python -m attnlab.flows.services.server_child PARENT_PID module [args...]`` runs ``module`` as ``python -m
module args`` would, with a watcher thread: once ``PARENT_PID`` is no longer this process's
parent (it exited, or was killed with SIGKILL and ran no exit handler), the child sends itself
SIGTERM (uvicorn's graceful shutdown) and exits at the latest ``GRACE_SECONDS`` later. A server
in a session of its own (out of reach of the terminal's Ctrl-C) so never outlives its command.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

from attnlab.ops.collector import collect_less_often

GRACE_SECONDS = 10.0


def watch_parent(parent: int, interval: float = 0.5) -> None:
    """Return when ``parent`` is no longer this process's parent."""
    while os.getppid() == parent:
        time.sleep(interval)


def end_when_orphaned(parent: int) -> None:
    watch_parent(parent)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_SECONDS)
    os._exit(1)


def main(argv: list[str]) -> None:
    parent, module, *args = argv
    collect_less_often()
    threading.Thread(target=end_when_orphaned, args=(int(parent),), name="parent-watch", daemon=True).start()
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
