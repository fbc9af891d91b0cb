"""The promotion lock of a registered model: whoever holds it may read, score and replace the
champion (and draw the first benchmark).

Two locks, taken in this order: a file lock beside the embedded store (every process on this
machine that uses that store) and a Prefect global concurrency limit of one slot (every process
that talks to the same Prefect server, workers on other machines included).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from attnlab.flows.tracking.store import resolve_store

#: Longest wait for the promotion lock before the promotion fails (seconds).
LOCK_TIMEOUT = 1800


def lock_name(model: str) -> str:
    return f"attnlab-promotion-{model}"


@contextlib.contextmanager
def prefect_lock(model: str, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the one slot of the Prefect global concurrency limit of ``model`` (created with one
    slot when missing). The slot is leased: a holder that dies frees it when the lease ends."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate, GlobalConcurrencyLimitUpdate
    from prefect.concurrency.sync import concurrency
    from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

    name = lock_name(model)
    with get_client(sync_client=True) as client:
        try:
            limit = client.read_global_concurrency_limit_by_name(name)
            if limit.limit != 1 or not limit.active:  # someone widened or switched off the lock
                client.update_global_concurrency_limit(name, GlobalConcurrencyLimitUpdate(limit=1, active=True))
        except ObjectNotFound:
            with contextlib.suppress(ObjectAlreadyExists):  # created meanwhile by another promotion
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
    with concurrency(name, occupy=1, timeout_seconds=timeout, strict=True):
        yield


@contextlib.contextmanager
def promotion_lock(model: str, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """The promotion lock of registered model ``model`` (see the module docstring)."""
    from filelock import FileLock

    store = resolve_store()
    with contextlib.ExitStack() as stack:
        if store.folder is not None:
            folder = store.folder / "locks"
            folder.mkdir(parents=True, exist_ok=True)
            stack.enter_context(FileLock(folder / f"{lock_name(model)}.lock", timeout=timeout))
        stack.enter_context(prefect_lock(model, timeout))
        yield
