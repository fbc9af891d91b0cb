"""Notice that Prefect's API server stopped answering while a command runs flows.

Without this a lost server goes unnoticed until the end of a run: Prefect sends task states as
events in the background (each retried for seconds), and the first API call, the promotion lock,
retries for minutes before the run fails in a wall of tracebacks. A :class:`PrefectWatch` polls
the server once a second from a daemon thread: the temporary server this command started is lost
when its process exits, any server when it refuses connections twice in a row (a slow answer on a
busy machine is not a loss). From then on Prefect's client stops retrying, and :func:`check`,
called by the train flow between its steps and after every optimisation step, raises
:class:`PrefectLost`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator


class PrefectLost(Exception):
    """Prefect's API server stopped answering while a flow was running."""


#: Seconds between two looks at the server.
INTERVAL = 1.0
#: Refused connections in a row that make a server lost.
REFUSALS = 2


def refuses(url: str, timeout: float = 2.0) -> bool:
    """True when nothing listens at ``url`` (connection refused); False when it answers, however
    late or with whatever status, or when it does not answer within ``timeout``."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return False
    except urllib.error.HTTPError:
        return False
    except urllib.error.URLError as exc:
        return isinstance(exc.reason, ConnectionRefusedError)
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


class PrefectWatch:
    """Watches the Prefect API at ``api_url`` (and ``process``, the temporary server this command
    started, when there is one) until :meth:`stop`; :attr:`lost` says why it was lost, or None."""

    def __init__(self, api_url: str, process: subprocess.Popen[bytes] | None = None, interval: float = INTERVAL, verbose: bool = False):
        from prefect.settings import get_current_settings

        self.api_url = api_url.rstrip("/")
        self.verbose = verbose
        self.settings = get_current_settings()
        self.process = process
        self.interval = interval
        self.lost: str | None = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="prefect-watch", daemon=True)

    def start(self) -> PrefectWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    def _watch(self) -> None:
        refusals = 0
        while not self._stopped.wait(self.interval):
            code = self.process.poll() if self.process is not None else None
            if code is not None:
                self._lose(f"its process exited with status {code}")
                return
            refusals = refusals + 1 if refuses(f"{self.api_url}/health") else 0
            if refusals >= REFUSALS:
                self._lose("connection refused")
                return

    def _lose(self, why: str) -> None:
        """Record the loss; from now on Prefect's client gives up at once and no task-run event
        waits for the server. Its requests read the retry setting each time, from the settings
        of their thread: the ones the watch was made under (the flow run's) and the global ones
        (Prefect's own threads) are changed in place, since new ones would not reach a flow run
        in progress."""
        from prefect.settings import get_current_settings

        self.lost = f"{self.api_url}: {why}"
        os.environ["PREFECT_CLIENT_MAX_RETRIES"] = "0"
        for settings in (self.settings, get_current_settings()):
            settings.client.max_retries = 0
        if not self.verbose:
            for name in ("prefect.events.clients", "prefect._internal.concurrency"):
                logging.getLogger(name).setLevel(logging.CRITICAL)
        drop_events()


def drop_events() -> None:
    """Drop the task-run events queued for a lost server and send later ones nowhere.

    Each queued event waits seconds for a connection that never comes, and Prefect drains the
    queue at exit: a run's few dozen events kept a command alive for minutes. Prefect has no
    public call to discard them; this empties the queue of each events worker (keeping its stop
    marker) and stops it, so the drain at exit returns at once.
    """
    from prefect.events.clients import NullEventsClient
    from prefect.events.worker import EventsWorker

    EventsWorker.set_client_override(NullEventsClient)
    # Prefect keeps one registry of its queue services on their generic base (dict[int, Self]),
    # which mypy cannot resolve through the subclass; the registry holds every queue service.
    for worker in list(EventsWorker._instances.values()):  # type: ignore[misc]
        if isinstance(getattr(worker, "_client", None), NullEventsClient):
            continue
        with contextlib.suppress(queue.Empty):
            while True:
                item = worker._queue.get_nowait()
                worker._queue.task_done()
                if item is not None:
                    worker._on_item_dropped(item)
        worker._stop()


_current: PrefectWatch | None = None


@contextlib.contextmanager
def watching(process: subprocess.Popen[bytes] | None = None, verbose: bool = False) -> Iterator[PrefectWatch | None]:
    """Watch the Prefect API this process uses (``process``: the temporary server it started)
    while the block runs; nothing is watched when Prefect has no API URL. Once it is lost,
    Prefect's logs about it are dropped unless ``verbose``. Inside a block that already watches
    (a sweep's runs on threads of the sweep's process) the watch in place serves."""
    global _current
    from prefect.settings import get_current_settings

    if _current is not None:
        yield _current
        return
    url = get_current_settings().api.url
    if not url:
        yield None
        return
    watch = PrefectWatch(str(url), process, verbose=verbose).start()
    _current = watch
    try:
        yield watch
    finally:
        _current = None
        watch.stop()
        if watch.lost is not None:
            from prefect.events.worker import EventsWorker

            EventsWorker.set_client_override(None)


def lost() -> str | None:
    """Why the watched Prefect API was lost, or None (also when nothing is watched)."""
    return _current.lost if _current is not None else None


def check() -> None:
    """Raise :class:`PrefectLost` once the watched Prefect API is lost."""
    why = lost()
    if why is not None:
        raise PrefectLost(f"lost Prefect's API server {why}")
