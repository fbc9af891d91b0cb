"""A sweep, a tune and predict take the cores the machine's other work leaves free: what the
commands read of the load, and what they say about it."""

from __future__ import annotations

import pytest
import torch

from attnlab.flows.cli import support
from attnlab.ops import threads


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    yield
    torch.set_num_threads(2)


def test_a_busy_machine_is_measured_and_said_on_the_sweep_line(monkeypatch, two_cores):
    monkeypatch.setattr(threads, "busy_cores", lambda cores: 1.6)
    busy, why = support.other_work(remote=False)
    assert (busy, why) == (1.6, "1.6 of 2 cores busy with other work")
    assert support.threads_note(1, why) == ", 1 torch thread each (1.6 of 2 cores busy with other work)"


def test_a_quiet_machine_and_a_remote_cluster_add_nothing(monkeypatch, two_cores):
    monkeypatch.setattr(threads, "busy_cores", lambda cores: 0.2)
    assert support.other_work(remote=False) == (0.2, "")
    assert support.threads_note(2, "") == ""
    monkeypatch.setattr(threads, "busy_cores", lambda cores: pytest.fail("a remote cluster's load is not this machine's"))
    assert support.other_work(remote=True) == (0.0, "")


def test_predict_takes_the_free_cores_without_a_line(monkeypatch, capsys, two_cores):
    monkeypatch.setattr(threads, "busy_cores", lambda cores: 1.9)
    assert support.use_free_cores(say=False) == 1 and torch.get_num_threads() == 1
    assert capsys.readouterr().err == ""
    assert support.use_free_cores() == 1
    assert capsys.readouterr().err == "busy machine (1.9 of 2 cores busy with other work): training with 1 torch thread\n"
