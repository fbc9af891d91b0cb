"""What every attnlab flow does the same way: the tags that link an MLflow run to its Prefect flow
run, and how an exception ends a run (KILLED for an interrupt, FAILED otherwise)."""

from __future__ import annotations

from prefect.runtime import flow_run


def flow_run_tags() -> dict[str, str]:
    """``prefect.flow_run_id`` and ``prefect.flow_run_name`` of the flow run in progress ("" outside one)."""
    return {"prefect.flow_run_id": str(flow_run.id or ""), "prefect.flow_run_name": str(flow_run.name or "")}


def is_interrupt(exc: BaseException) -> bool:
    """True for Ctrl-C, SIGTERM (as raised by the CLI or by Prefect) and interpreter exit."""
    return isinstance(exc, (KeyboardInterrupt, SystemExit)) or type(exc).__name__ == "TerminationSignal"


def ending_status(exc: BaseException) -> str:
    """The MLflow status of a run that ``exc`` ended: KILLED for an interrupt, else FAILED."""
    return "KILLED" if is_interrupt(exc) else "FAILED"
