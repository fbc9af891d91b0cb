"""A long phase of a run says every so often that it is still going; a short one says nothing."""

from __future__ import annotations

import threading

from attnlab.training.phase_lines import phase_lines, still_line


def test_a_long_phase_says_it_is_still_going_and_stops_when_it_ends():
    said: list[str] = []
    third = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if len(said) == 3:
            third.set()

    with phase_lines("evaluate", say, quiet=0.01, every=0.01):
        assert third.wait(60)  # the event: three lines said while the block runs
    count = len(said)
    assert all(line.startswith("evaluating on the test split: ") and line.endswith(" s so far") for line in said)
    assert not [t for t in threading.enumerate() if t.name == "attnlab-phase-evaluate"]  # its thread ended with the block
    assert len(said) == count


def test_a_short_phase_and_training_say_nothing():
    said: list[str] = []
    with phase_lines("log", said.append, quiet=3600):
        pass
    with phase_lines("train", said.append, quiet=0):  # training reports its own steps
        threading.Event().wait(0.05)
    assert said == []
    assert still_line("log", 7.4) == "logging the results to MLflow: 7 s so far"
