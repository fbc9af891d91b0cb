"""The stale-run rule: a RUNNING run whose owner process is gone, or silent for too long."""

from __future__ import annotations

import os

from attnlab.ops.stale_runs import HEARTBEAT, MAX_SILENCE_SECONDS, owner_tags, process_alive, stale_reason

NOW = 1_800_000_000.0


def test_owner_gone_on_this_host_is_stale():
    tags = owner_tags("here", 4242, NOW)
    assert stale_reason(tags, "here", NOW, alive=lambda pid: False) == "its process 4242 on here is gone"
    assert stale_reason(tags, "here", NOW, alive=lambda pid: True) is None


def test_owner_on_another_host_is_stale_only_after_long_silence():
    tags = owner_tags("there", 4242, NOW)
    never = lambda pid: False  # noqa: E731  another host's processes cannot be asked
    assert stale_reason(tags, "here", NOW + MAX_SILENCE_SECONDS - 1, alive=never) is None
    assert stale_reason(tags, "here", NOW + 7 * 3600, alive=never) == "no heartbeat from process 4242 on there for 7.0 h"


def test_a_parent_run_without_heartbeat_is_stale_only_once_its_process_is_gone():
    tags = owner_tags("here", 4242, None)  # a sweep's or a tune's parent sends no heartbeat
    assert HEARTBEAT not in tags
    assert stale_reason(tags, "here", NOW, alive=lambda pid: False) == "its process 4242 on here is gone"
    elsewhere = owner_tags("there", 4242, None)
    assert stale_reason(elsewhere, "here", NOW + 10 * MAX_SILENCE_SECONDS, alive=lambda pid: False) is None


def test_runs_without_owner_tags_are_never_stale():
    assert stale_reason({}, "here", NOW, alive=lambda pid: False) is None
    assert stale_reason({"attnlab.host": "here", "attnlab.pid": "x"}, "here", NOW, alive=lambda pid: False) is None
    silent = {**owner_tags("there", 1, NOW), HEARTBEAT: "garbled"}
    assert stale_reason(silent, "here", NOW + 10 * MAX_SILENCE_SECONDS) is None


def test_process_alive():
    assert process_alive(os.getpid())
    assert not process_alive(2**22 + 12345)  # above Linux's pid_max
