"""Which stopped runs 'attnlab train --resume' continues, and the one-line refusals."""

from __future__ import annotations

from attnlab.ops.resume_policy import StoppedRun, resume_refusal


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
