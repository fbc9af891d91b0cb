"""Ends every process a test run started once the run is over, also when pytest, or the ``make``
above it, was killed with SIGKILL and ran no clean-up of its own.

``python tests/_reaper.py --pytest PID --run RUN_ID --folder FOLDER`` is started by the run's
pytest (see ``_testrun.py``) in a session of its own, so that a kill of the terminal's or make's
process group does not reach it, with a pipe from pytest on its stdin. It waits for the first of:

* ``done`` on stdin: the run ended normally. It ends the processes the run left behind and exits;
  pytest removes the run's folder itself.
* end of file on stdin without ``done``, or pytest gone: pytest died.
* any process between pytest and the leader of its session gone (``kill -9`` of ``make test``
  leaves the shell that runs its recipe, and pytest under it, running).

In the last two cases it kills pytest, then every process whose environment names RUN_ID in
``ATTNLAB_TEST_RUN`` (which every process the run starts inherits), with the process groups
they lead, until none is left; then it removes FOLDER and exits.
"""

from __future__ import annotations

import argparse
import os
import selectors
import shutil
import signal
import sys

import psutil

#: The variable that names the runs a process belongs to (innermost last).
RUN_VARIABLE = "ATTNLAB_TEST_RUN"
#: How often processes are checked where the system cannot report their exit (no pidfd).
POLL_SECONDS = 0.25
#: Rounds of killing before the reaper gives up on a process that does not die (a hang guard).
MAX_ROUNDS = 200


def lineage(pytest: psutil.Process) -> list[psutil.Process]:
    """pytest and its ancestors up to the leader of its session (its parent at least), never
    init. Each parent is checked to still be the parent once it is held, so that a pid reused
    after a quick death is not taken for it."""
    chain = [pytest]
    process = pytest
    while True:
        try:
            parent_pid = process.ppid()
            if parent_pid <= 1:
                break
            parent = psutil.Process(parent_pid)
            if process.ppid() != parent_pid:
                break  # reparented meanwhile: its parent died; the watch sees the change
        except psutil.Error:
            break
        chain.append(parent)
        try:
            if os.getsid(parent_pid) == parent_pid:
                break
        except OSError:
            break
        process = parent
    return chain


class Watch:
    """Readiness of stdin, and the exit of a list of processes: pidfds where the system has
    them, otherwise polling."""

    def __init__(self, processes: list[psutil.Process]):
        self.selector = selectors.DefaultSelector()
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "stdin")
        self.polled: list[psutil.Process] = []
        for process in processes:
            try:
                fd = os.pidfd_open(process.pid)  # type: ignore[attr-defined]
            except (AttributeError, OSError):
                self.polled.append(process)
                continue
            self.selector.register(fd, selectors.EVENT_READ, process)
        # A process that died before its pidfd was opened (its pid maybe reused) counts as exited.
        self.polled.extend(p for p in processes if not p.is_running())

    def wait(self) -> str:
        """'done', 'pytest gone' (end of file, without done) or 'exited: <process>'."""
        timeout = POLL_SECONDS if self.polled else None
        while True:
            for key, _ in self.selector.select(timeout):
                if key.data == "stdin":
                    data = os.read(key.fd, 64)
                    return "done" if data.startswith(b"done") else "pytest gone"
                return f"exited: {key.data.pid}"
            for process in self.polled:
                if not alive(process):
                    return f"exited: {process.pid}"


def alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def marked(run_id: str) -> list[psutil.Process]:
    """Live processes whose environment names ``run_id`` (zombies left out: already dead)."""
    found = []
    for process in psutil.process_iter():
        if process.pid == os.getpid():
            continue
        try:
            if run_id in process.environ().get(RUN_VARIABLE, "").split():
                found.append(process)
        except psutil.Error:
            continue
    return found


def say(line: str) -> None:
    """One line on stderr; a closed stderr (a killed terminal) must not stop the reaping."""
    try:
        print(f"test run reaper: {line}", file=sys.stderr, flush=True)
    except OSError:
        pass


def kill(process: psutil.Process, spared_groups: set[int]) -> None:
    """SIGKILL for ``process`` and, where it leads a process group, for the whole group (its
    children that cleared their environment still belong to it)."""
    try:
        group = os.getpgid(process.pid)
        if group == process.pid and group not in spared_groups:
            os.killpg(group, signal.SIGKILL)
        process.kill()  # psutil checks it is still the same process
    except (psutil.Error, OSError):
        pass


def reap(run_id: str, spared: set[int]) -> list[str]:
    """Kill the processes of ``run_id`` (not ``spared``) until none is left; their command lines."""
    spared_groups = {os.getpgrp()}
    for pid in spared:
        try:
            spared_groups.add(os.getpgid(pid))
        except OSError:
            pass
    ended: list[str] = []
    for _ in range(MAX_ROUNDS):
        found = [process for process in marked(run_id) if process.pid not in spared]
        if not found:
            break
        for process in found:
            try:
                ended.append(f"{process.pid} {' '.join(process.cmdline())[:200]}")
            except psutil.Error:
                pass
            kill(process, spared_groups)
        psutil.wait_procs(found, timeout=POLL_SECONDS)
    return ended


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pytest", type=int, required=True, help="the pid of the run's pytest")
    parser.add_argument("--run", required=True, help="the run's id in ATTNLAB_TEST_RUN")
    parser.add_argument("--folder", required=True, help="the run's folder, removed when pytest died")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for pytest, which then says done

    try:
        pytest = psutil.Process(args.pytest)
        watch = Watch(lineage(pytest))
        if os.getppid() != args.pytest:
            raise psutil.NoSuchProcess(args.pytest)  # gone before it was held
        event = watch.wait()
    except psutil.NoSuchProcess:
        pytest, event = None, "pytest gone"
    if event == "done":
        ended = reap(args.run, spared={args.pytest})
        for line in ended:
            say(f"ended a process the tests left running: {line}")
        return 0
    say(f"the test run was killed ({event}); ending its processes")
    if pytest is not None and alive(pytest):
        kill(pytest, spared_groups={os.getpgrp()})
    reap(args.run, spared=set())
    shutil.rmtree(args.folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
