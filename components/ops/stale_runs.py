"""When a run left RUNNING is stale: the process that owned it is gone.

A run records its owner when it starts (host name and process id) and a heartbeat (Unix time)
then and after every epoch. A process killed by SIGKILL, or one that lost its tracking server,
cannot end its run; the next command against the store finds such runs with this rule and ends
them FAILED. Pure: the caller says which host this is, what time it is and whether a process
lives (:func:`process_alive` answers for this host).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping

#: Run tags of the owner and its heartbeat.
HOST = "attnlab.host"
PID = "attnlab.pid"
HEARTBEAT = "attnlab.heartbeat"
#: A run whose owner is on another host is stale after this long without a heartbeat (an epoch,
#: evaluation or registration never takes this long here).
MAX_SILENCE_SECONDS = 6 * 3600.0


def this_host() -> str:
    return socket.gethostname()


def owner_tags(host: str, pid: int, now: float | None) -> dict[str, str]:
    """The tags a run starts with: its owner and a first heartbeat at ``now``. None for a run
    that sends none (a sweep's or a tune's parent): found stale only once its process is gone."""
    owner = {HOST: host, PID: str(pid)}
    return owner if now is None else {**owner, HEARTBEAT: heartbeat(now)}


def heartbeat(now: float) -> str:
    return f"{now:.0f}"


def process_alive(pid: int) -> bool:
    """True when a process ``pid`` exists on this host (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_reason(
    tags: Mapping[str, str],
    host: str,
    now: float,
    alive: Callable[[int], bool] = process_alive,
    max_silence: float = MAX_SILENCE_SECONDS,
) -> str | None:
    """Why a RUNNING run with ``tags`` is stale, or None while its owner may still be at work.

    Stale: its owner was a process on ``host`` (this host) that is gone, or its last heartbeat is
    older than ``max_silence`` seconds. A run without owner tags (an older run, another tool's) is
    never stale: nothing says who owns it.
    """
    try:
        owner, pid = tags[HOST], int(tags[PID])
    except (KeyError, ValueError):
        return None
    if owner == host and not alive(pid):
        return f"its process {pid} on {owner} is gone"
    try:
        silence = now - float(tags[HEARTBEAT])
    except (KeyError, ValueError):
        return None
    if silence > max_silence:
        return f"no heartbeat from process {pid} on {owner} for {silence / 3600:.1f} h"
    return None
