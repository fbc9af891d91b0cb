"""A sweep or tune that stops (Ctrl-C, SIGTERM, a lost Prefect server) stops its workers: each
run's ending (KILLED) is left to finish, then the worker exits, printing nothing."""

import multiprocessing
import time
from pathlib import Path

import pytest

from attnlab.flows.sweep.worker_pool import SeparatePools, start_worker, stop_workers, worker_context


def _ends_slowly(marker: str) -> None:
    """A task that trains until interrupted, then takes a second to end its run."""
    Path(marker).write_text("training")
    try:
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        Path(marker).write_text("ending")
        time.sleep(1.0)  # an interrupt here would leave the run RUNNING
        Path(marker).write_text("ended")
        raise


@pytest.mark.slow  # the workers' forkserver imports torch, Prefect and MLflow
def test_stopped_workers_end_their_runs_then_exit_quietly(tmp_path, capfd):
    pool = SeparatePools(1, worker_context(), start_worker)  # one forkserver a process: the sweeps'
    marker = tmp_path / "run"
    try:
        task = pool.submit(_ends_slowly, str(marker))
        while not (marker.exists() or task.done()):
            time.sleep(0.05)
        assert not task.done(), task.exception()  # it trains until interrupted
        assert marker.read_text() == "training"
        stop_workers(grace=60.0)  # a hang guard only: the worker ends in about a second
        assert marker.read_text() == "ended"
        assert multiprocessing.active_children() == []
    finally:
        pool.shutdown(wait=False)
    assert "Traceback" not in capfd.readouterr().err
