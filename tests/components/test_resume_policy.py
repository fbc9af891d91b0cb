"""Which stopped runs 'attnlab train --resume' continues, and the one-line refusals."""

from __future__ import annotations

from attnlab.ops.resume_policy import StoppedRun, busy_refusal, damaged_checkpoint, resume_refusal
from attnlab.ops.stale_runs import owner_tags


def run(status: str = "KILLED", stale: str | None = None, local: bool = False, artifact: bool = True) -> StoppedRun:
    return StoppedRun("r1", status, stale, local, artifact)


def test_killed_failed_and_abandoned_runs_with_a_checkpoint_resume():
    assert resume_refusal(run("KILLED")) is None
    assert resume_refusal(run("FAILED", local=True, artifact=False)) is None
    assert resume_refusal(run("RUNNING", stale="its process 12 on h is gone", local=True, artifact=False)) is None


def test_finished_live_or_checkpointless_runs_are_refused_in_one_line():
    assert "FINISHED: nothing to resume" in resume_refusal(run("FINISHED"))
    assert "still RUNNING" in resume_refusal(run("RUNNING", stale=None, local=True))
    assert "kept no checkpoint" in resume_refusal(run("KILLED", artifact=False))
    assert "SCHEDULED" in resume_refusal(run("SCHEDULED"))
    assert all("\n" not in resume_refusal(r) for r in (run("FINISHED"), run("KILLED", artifact=False)))


def test_a_second_resume_is_refused_naming_the_process_that_resumes_the_run():
    holder = owner_tags("h1", 4321, 1000.0)
    line = busy_refusal("r1", holder, 1042.0)
    assert line.startswith("run r1 is being resumed by process 4321 on h1 (started 42 s ago); ")
    assert "wait for that one to end, or stop it (Ctrl-C there)" in line and "\n" not in line
    assert busy_refusal("r1", {}, 1042.0).startswith("run r1 is being resumed by another process; ")


def test_a_damaged_checkpoint_says_the_choices_left():
    line = damaged_checkpoint("r1", "/c/checkpoint.pt is not a torch file attnlab can load (EOFError)")
    assert line.startswith("run r1 cannot be resumed: its checkpoint is damaged (/c/checkpoint.pt is not a torch file")
    assert "start a new run instead" in line and "resume another run ('attnlab runs' lists them)" in line
