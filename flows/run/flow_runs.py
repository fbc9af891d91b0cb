"""What every attnlab flow does the same way: the tags that link an MLflow run to its Prefect flow
run, and how an exception ends a run (KILLED for an interrupt, FAILED otherwise)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def flow_run_tags() -> dict[str, str]:
    """``prefect.flow_run_id`` and ``prefect.flow_run_name`` of the flow run in progress ("" outside one)."""
    from prefect.runtime import flow_run  # loaded here: is_interrupt and interrupt_alone need no Prefect

    return {"prefect.flow_run_id": str(flow_run.id or ""), "prefect.flow_run_name": str(flow_run.name or "")}


def is_interrupt(exc: BaseException) -> bool:
    """True for Ctrl-C, SIGTERM (as raised by the CLI or by Prefect) and interpreter exit."""
    return isinstance(exc, (KeyboardInterrupt, SystemExit)) or type(exc).__name__ == "TerminationSignal"


def ending_status(exc: BaseException) -> str:
    """The MLflow status of a run that ``exc`` ended: KILLED for an interrupt, else FAILED."""
    return "KILLED" if is_interrupt(exc) else "FAILED"


def interrupt_alone(work: Callable[[], T]) -> T:
    """``work()`` in a worker process; an interrupt it raises is raised again without the
    exceptions it interrupted. Those travel with it back to the parent process (pickled with
    their context where tblib's pickling support is installed, as Dask installs it) and need not
    pickle: a Ctrl-C inside SQLAlchemy's first use of a class interrupts a ``KeyError`` holding a
    weakref, and a worker that cannot send its exception back dies printing a traceback. Nor
    does the interrupt keep the frames it cut into, which travel as its traceback: tblib cannot
    pickle a frame whose line Python does not know (one of SQLAlchemy's compiled statements)."""
    try:
        return work()
    except BaseException as exc:
        if not is_interrupt(exc):
            raise
        caught = exc
    caught.__context__ = caught.__cause__ = None
    raise caught.with_traceback(None)
