"""The process runner of a sweep: worker processes that die alone.

Prefect's ``ProcessPoolTaskRunner`` runs every task in one ``ProcessPoolExecutor``, and that
executor does not survive the loss of a worker: when one worker process dies (SIGKILL, the
out-of-memory killer), it fails every task it holds or has queued and terminates the healthy
workers mid-run. :class:`SeparateWorkersTaskRunner` is that runner over a :class:`SeparatePools`
executor instead: each worker is a pool of one process, so a worker that dies fails the one run
it held, the others train on, and the next run starts in a fresh worker.

Workers are forked from a server process that imported what a run needs once
(:func:`worker_context`, the standard library's forkserver), not spawned: each spawned worker
imported torch, Prefect, MLflow and the run's steps again (5-6 CPU-s, and as much again for every
worker that replaces a lost one). Each still starts with the environment of its parent at that
moment, as a spawned one does.

A Ctrl-C reaches every process of the terminal's group. A worker that holds a task is interrupted
like the command (its run ends KILLED); an idle one, as a second Ctrl-C finds the workers once
their runs ended, exits quietly: Python's default prints a traceback of the queue it was reading.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import multiprocessing.context
import os
import select
import signal
import sys
import threading
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from prefect.task_runners import ProcessPoolTaskRunner

from attnlab.flows.run.store_writes import WRITING, defer_interrupt
from attnlab.flows.tracking.query_interrupts import note_interrupt
from attnlab.ops.collector import collect_less_often
from attnlab.ops.stale_runs import process_alive

#: True while this worker process runs a task (see :func:`start_worker`).
_busy = False
#: True once an interrupt was raised in that task (:func:`_on_interrupt`).
_interrupted = False
#: What a worker imports for a run (a sweep's, a tune's), imported once by the server process
#: the workers are forked from. None of them starts a Python thread; the native threads they start
#: (numpy's OpenBLAS server, jemalloc's background thread) are made fork-safe by their libraries.
WORKER_MODULES = [
    "attnlab.flows.sweep.sweep_flow", "attnlab.flows.tune.tune_flow", "torch._dynamo", "attnlab.viz.heatmaps",
    "attnlab.flows.pyfunc", "mlflow.models", "attnlab.flows.sweep.worker_warmup",
]  # fmt: skip


def worker_context() -> multiprocessing.context.ForkServerContext:
    """The processes of :class:`SeparatePools`: forked from the forkserver, which imports
    :data:`WORKER_MODULES` when this process first starts a worker and exits with it."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_MODULES)
    return context


def _start_forked(environ: dict[str, str], owner: int, initializer: Any, initargs: tuple[Any, ...]) -> None:
    """A forked worker's first step: its parent's environment when the worker was asked for (the
    forkserver's is that of the first worker's time), a watch on the process ``owner`` that asked
    for it (:func:`_interrupt_when_gone`), then ``initializer(*initargs)``."""
    os.environ.clear()
    os.environ.update(environ)
    if initializer is not None:
        initializer(*initargs)
    threading.Thread(target=_interrupt_when_gone, args=(owner,), name="attnlab-owner-watch", daemon=True).start()


def _interrupt_when_gone(owner: int) -> None:
    """Interrupt this worker, as a Ctrl-C does (:func:`_on_interrupt`: its run ends KILLED), once
    the process ``owner`` is gone, and again once it is idle (it then exits): a command killed
    with SIGKILL would otherwise leave its workers training to the end of their runs, then waiting
    for work forever."""
    try:
        handle = os.pidfd_open(owner)
    except (AttributeError, OSError):  # no pidfd here, or gone already: ask every second
        while process_alive(owner):
            time.sleep(1.0)
    else:
        try:
            select.select([handle], [], [])  # readable once the process has exited
        finally:
            os.close(handle)
    interrupt_outside_writes()
    while True:  # the run ends KILLED first: interrupting that again could leave it RUNNING
        time.sleep(0.5)
        if not _busy:
            os.kill(os.getpid(), signal.SIGINT)


def interrupt_outside_writes() -> None:
    """SIGINT to this process, never while it writes to the embedded store
    (:mod:`attnlab.flows.run.store_writes`): a write under way ends first, and one about to start
    is interrupted before it begins."""
    with WRITING:
        os.kill(os.getpid(), signal.SIGINT)


class WorkerInterrupted(Exception):
    """A Ctrl-C reached a worker outside its task's own code."""


def start_worker() -> None:
    """The initializer of every worker process: garbage collected at attnlab's pace
    (:mod:`attnlab.ops.collector`) before a task imports torch, MLflow and the run's steps; a
    Ctrl-C interrupts its task, or ends it quietly while it waits for one."""
    collect_less_often()
    signal.signal(signal.SIGINT, _on_interrupt)
    sys.unraisablehook = _quiet_unraisable


def _quiet_unraisable(unraisable: Any) -> None:
    """A worker's ``sys.unraisablehook``: Python's, except for an interrupt that landed in a
    finalizer (where Python can only print it): it is dropped, and the next one is raised, since
    the run it was meant to stop trains on."""
    global _interrupted
    if issubclass(unraisable.exc_type, KeyboardInterrupt):
        _interrupted = False
        return
    sys.__unraisablehook__(unraisable)


def _on_interrupt(signum: int, frame: Any) -> None:
    """A worker's SIGINT handler: the first interrupt of a task is raised in it (its run ends
    KILLED), later ones are ignored while that run ends (cutting into its ending could leave it
    RUNNING), and an idle worker exits."""
    global _interrupted
    if not _busy:
        raise SystemExit(128 + signum)  # multiprocessing ends the process on it without a traceback
    if not _interrupted:
        _interrupted = True
        note_interrupt()
        if defer_interrupt():  # raised once the store write under way has ended
            return
        raise KeyboardInterrupt


def stop_workers(grace: float = 5.0) -> None:
    """Stop the worker processes this process started (a process pool, a local Dask cluster),
    SIGKILL after ``grace`` seconds. An interrupt that reached this process alone (SIGTERM, a
    signal to one pid) would leave them training, and the task runner would wait for them before
    the flow could end.

    A sweep's or tune's own workers (the processes of :func:`worker_context`) are interrupted as
    a Ctrl-C does, every 0.2 s until they exit: the first interrupt ends their run, the others are
    ignored until they are idle, then end them. SIGTERM would reach Prefect's
    handler instead, whose exception, landing where Python can only print it (while the worker
    ends its run after the terminal's own Ctrl-C), printed a traceback. Other children get
    SIGTERM."""
    children = multiprocessing.active_children()
    ours = [child for child in children if isinstance(child, worker_context().Process)]
    for child in children:
        if child not in ours:
            child.terminate()
    deadline = time.monotonic() + grace
    while (alive := [child.pid for child in ours if child.is_alive() and child.pid]) and time.monotonic() < deadline:
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):  # reaped meanwhile by its pool
                os.kill(pid, signal.SIGINT)
        time.sleep(0.2)
    for child in children:
        child.join(max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            child.kill()
            child.join()


def _run_busy(fn: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a worker process, marked busy meanwhile."""
    global _busy, _interrupted
    _busy, _interrupted = True, False
    try:
        return fn(*args, **kwargs)
    except KeyboardInterrupt:
        # Prefect's runner sends back a task's interrupt as its crashed state; one that lands
        # outside the task (while the worker reports that state) would reach the parent's result
        # thread, which takes only an Exception and would end printing a traceback.
        raise WorkerInterrupted("the worker was interrupted while it reported its task's state") from None
    finally:
        _busy = False


class SeparatePools(Executor):
    """An executor of worker processes that each live in a ``ProcessPoolExecutor`` of their own
    (``mp_context``, ``initializer`` and ``initargs`` as that executor takes them; each worker
    starts with this process's environment of the moment it is asked for). A task goes to
    an idle worker, else to a new one; at most ``max_workers`` idle workers are kept. The sweep
    submits at most as many tasks as it runs at once, so that is also the number of workers."""

    def __init__(self, max_workers: int, mp_context: Any, initializer: Any = None, initargs: tuple[Any, ...] = ()):
        # At exit, the workers an interrupted sweep or tune could not stop (two Ctrl-Cs at once
        # cut into its stopping): multiprocessing's exit function, which runs after this one,
        # would wait for them forever.
        atexit.unregister(stop_workers)
        atexit.register(stop_workers)
        self._mp_context = mp_context
        self._initializer = (initializer, initargs)
        self._max_idle = max_workers
        self._idle: list[ProcessPoolExecutor] = []
        self._pools: set[ProcessPoolExecutor] = set()
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            pool = self._idle.pop() if self._idle else self._new_worker()
            self._pools.add(pool)
        future = pool.submit(_run_busy, fn, *args, **kwargs)
        future.add_done_callback(lambda done: self._release(pool, done))
        return future

    def _new_worker(self) -> ProcessPoolExecutor:
        started = (dict(os.environ), os.getpid(), *self._initializer)
        return ProcessPoolExecutor(1, self._mp_context, initializer=_start_forked, initargs=started)

    def _release(self, pool: ProcessPoolExecutor, done: Future[Any]) -> None:
        """Make ``pool`` idle again after its task ``done``; a pool whose worker died is dropped."""
        lost = not done.cancelled() and isinstance(done.exception(), BrokenProcessPool)
        with self._lock:
            keep = not lost and not self._closed and len(self._idle) < self._max_idle
            if keep:
                self._idle.append(pool)
            else:
                self._pools.discard(pool)
        if not keep:
            pool.shutdown(wait=False)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            pools, self._idle = list(self._pools), []
            self._pools.clear()
        for pool in pools:
            pool.shutdown(wait=wait, cancel_futures=cancel_futures)


class SeparateWorkersTaskRunner(ProcessPoolTaskRunner):
    """Prefect's process-pool runner (contexts, events and logs forwarded to this process) over
    :class:`SeparatePools` of forked workers (:func:`worker_context`): a lost worker fails only the
    task it held. Each worker starts with :func:`start_worker`."""

    def __init__(self, max_workers: int | None = None) -> None:
        super().__init__(max_workers=max_workers, initializer=start_worker)

    def __enter__(self) -> SeparateWorkersTaskRunner:
        super().__enter__()
        shared = self._executor  # the runner's own pool: no worker is started before a submit
        assert shared is not None
        # Prefect declares its pool a ProcessPoolExecutor; SeparatePools serves the submit and
        # shutdown calls it makes, not the rest of that class.
        self._executor = SeparatePools(  # type: ignore[assignment]
            self._max_workers,
            worker_context(),
            shared._initializer,
            shared._initargs,
        )
        shared.shutdown(wait=False)
        return self


def lost_worker(exc: BaseException) -> bool:
    """True when ``exc`` says the worker process that ran a task died."""
    return isinstance(exc, BrokenProcessPool)
