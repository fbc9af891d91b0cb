"""A sweep's and a tune's worker processes (attnlab.flows.sweep.worker_pool): forked from one
server process that imported what a run needs and built what its first run would build, each
with its parent's environment of the moment it was asked for. (What a Ctrl-C does to them: test_worker_interrupts.py.)"""

from __future__ import annotations

import os
import sys

import pytest

#: What a run imports, the worker's first MlflowClient on the embedded store and its first
#: ``log_model`` included (attnlab.flows.sweep.worker_warmup).
RUN_MODULES = ("torch", "attnlab.flows.sweep.sweep_flow", "attnlab.flows.tune.tune_flow", "mlflow.store.tracking.sqlalchemy_store",
               "mlflow.store.model_registry.sqlalchemy_store")  # fmt: skip


def _worker_view() -> dict:
    """What a worker holds before it runs anything of a run: this module imports no torch."""
    requirements_utils = sys.modules.get("mlflow.utils.requirements_utils")
    return {
        "imported": [name for name in RUN_MODULES if name in sys.modules],
        # what the first log_model of a process builds: each distribution's files read
        "package_map": getattr(requirements_utils, "_PACKAGES_TO_MODULES", None) is not None,
        "environment": {k: v for k, v in os.environ.items() if k.startswith("ATTNLAB_POOL_TEST")},
    }


def _in_a_new_worker() -> dict:
    from attnlab.flows.sweep.worker_pool import SeparatePools, worker_context

    pools = SeparatePools(1, worker_context())
    try:
        return pools.submit(_worker_view).result(timeout=600)  # a hang guard only
    finally:
        pools.shutdown()


@pytest.mark.slow
def test_workers_start_with_a_runs_modules_imported_and_their_parents_environment_of_the_moment(monkeypatch):
    monkeypatch.setenv("ATTNLAB_POOL_TEST_GONE", "set when the first worker started")
    first = _in_a_new_worker()
    assert first["imported"] == list(RUN_MODULES) and first["package_map"]
    assert first["environment"] == {"ATTNLAB_POOL_TEST_GONE": "set when the first worker started"}

    # A later worker is forked from the same server, whose environment is the first worker's time.
    monkeypatch.delenv("ATTNLAB_POOL_TEST_GONE")
    monkeypatch.setenv("ATTNLAB_POOL_TEST_NEW", "set since")
    later = _in_a_new_worker()
    assert later["environment"] == {"ATTNLAB_POOL_TEST_NEW": "set since"}
    assert later["imported"] == first["imported"] and later["package_map"]
