"""The diagnosis of a run stopped by its surroundings: which fault, in which order, in one line."""

from __future__ import annotations

import errno
import sqlite3

from attnlab.ops.faults import LOW_SPACE_BYTES, Surroundings, causes, diagnose, fault_line, out_of_space

PLENTY = 10 * 2**30


def raised_while_handling(inner: BaseException, outer: BaseException) -> BaseException:
    """``outer`` raised while ``inner`` was being handled (its __context__), as Python chains them."""
    try:
        try:
            raise inner
        except BaseException:
            raise outer  # noqa: B904  (chained implicitly, as __context__, on purpose)
    except BaseException as exc:
        return exc


def test_causes_follow_cause_and_context_and_stop_on_a_cycle():
    first, second = ValueError("a"), RuntimeError("b")
    chained = raised_while_handling(first, second)
    assert causes(chained) == [second, first]
    first.__context__ = second  # a cycle must not loop forever
    assert causes(second) == [second, first]


def test_out_of_space_from_an_error_number_or_from_what_sqlite_and_torch_say():
    assert out_of_space(OSError(errno.ENOSPC, "No space left on device"))
    assert out_of_space(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert out_of_space(raised_while_handling(sqlite3.OperationalError("database or disk is full"), RuntimeError("ending the run failed")))
    assert not out_of_space(OSError(errno.EACCES, "Permission denied"))
    # torch's checkpoint writer says only this: the free space decides (below)
    assert not out_of_space(RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64 vs 0"))


def test_a_folder_without_space_is_a_full_disk_whatever_the_error_said():
    around = Surroundings({"/data/cache": LOW_SPACE_BYTES - 1, "/data/store": PLENTY})
    fault = diagnose(RuntimeError("unexpected pos 64 vs 0"), around)
    assert fault is not None and fault.kind == "disk"
    assert fault.lost == "the disk of /data/cache is full"
    assert diagnose(RuntimeError("unexpected pos 64 vs 0"), Surroundings({"/data/cache": LOW_SPACE_BYTES})) is None


def test_a_write_that_found_no_space_names_the_fullest_folder():
    around = Surroundings({"/a": PLENTY, "/b": 5 * LOW_SPACE_BYTES})
    fault = diagnose(OSError(errno.ENOSPC, "No space left on device"), around)
    assert fault.kind == "disk" and fault.lost == "the disk of /b is full"


def test_prefect_lost_wins_over_the_error_it_caused():
    around = Surroundings({"/a": 0}, prefect_lost="http://127.0.0.1:4200/api: connection refused")
    fault = diagnose(ConnectionError("refused"), around)
    assert fault.kind == "prefect"
    assert fault.lost == "lost Prefect's API server (http://127.0.0.1:4200/api: connection refused)"


def test_artifacts_folder_lost_during_the_run():
    around = Surroundings({"/s": PLENTY}, artifact_root="/s/artifacts", artifact_root_lost=True)
    fault = diagnose(KeyError("benchmark.json"), around)
    assert fault.kind == "artifacts" and "/s/artifacts was deleted during the run" in fault.lost
    assert diagnose(KeyError("x"), Surroundings({"/s": PLENTY}, artifact_root="/s/artifacts")) is None


def test_anything_else_is_not_a_fault_of_the_surroundings():
    assert diagnose(ValueError("a bug"), Surroundings({"/a": PLENTY}, artifact_root="/a/artifacts")) is None


def test_the_line_says_what_was_lost_the_run_the_checkpoint_the_champion_and_what_to_do():
    fault = diagnose(OSError(errno.ENOSPC, "full"), Surroundings({"/c": 0}))
    ended = fault_line(fault, "abc123", True, "/c/checkpoints/abc123/checkpoint.pt")
    assert ended == (
        "the disk of /c is full; run abc123 ended FAILED; the last checkpoint is kept at "
        "/c/checkpoints/abc123/checkpoint.pt; the champion is unchanged; free some space there and run the command again"
    )
    stays = fault_line(fault, "abc123", False, None)
    assert "run abc123 stays RUNNING until the next 'attnlab train' against that store ends it FAILED" in stays
    assert "no checkpoint was written yet" in stays and "\n" not in stays
