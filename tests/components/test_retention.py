"""Registry retention: which versions a retrain prunes (pure, no MLflow)."""

from __future__ import annotations

import pytest

from attnlab.ops.retention import DEFAULT_KEEP, VersionRecord, check_keep, keep_problem, previous_champion, to_prune


def plain(*numbers: int) -> list[VersionRecord]:
    """Decided, not promoted versions."""
    return [VersionRecord(n) for n in numbers]


def test_versions_beyond_the_newest_keep_are_pruned_oldest_first():
    assert to_prune(plain(5, 1, 4, 2, 3, 6), 3, None, None) == [1, 2, 3]
    assert to_prune(plain(1, 2, 3), 3, None, None) == []
    assert to_prune([], 2, None, None) == []


def test_the_champion_and_the_previous_champion_are_never_pruned():
    assert to_prune(plain(1, 2, 3, 4, 5, 6), 2, champion=2, previous=1) == [3, 4]
    assert to_prune(plain(1, 2, 3, 4), 2, champion=3, previous=1) == [2]


def test_a_version_without_a_decision_is_never_pruned():
    """Being promoted right now (scored, not yet decided), or registered by hand."""
    versions = [VersionRecord(1, decided=False), *plain(2, 3, 4)]
    assert to_prune(versions, 2, champion=4, previous=None) == [2]


def test_the_newest_keep_stay_whatever_they_are():
    """The champion inside the newest N does not widen the window."""
    assert to_prune(plain(1, 2, 3, 4), 2, champion=4, previous=3) == [1, 2]


@pytest.mark.parametrize("keep", [1, 0, -3, 2.5, True, "3"])
def test_keep_is_at_least_two(keep):
    with pytest.raises(ValueError, match="give at least 2"):
        check_keep(keep)
    with pytest.raises(ValueError, match="give at least 2"):
        to_prune(plain(1, 2, 3), keep, None, None)


def test_the_default_keep_is_valid():
    assert keep_problem(DEFAULT_KEEP) is None and keep_problem(2) is None


def test_the_previous_champion_is_the_one_the_champion_was_compared_with():
    versions = [VersionRecord(1, promoted=True), VersionRecord(2), VersionRecord(3, promoted=True, compared_with=1)]
    assert previous_champion(3, versions) == 1


def test_without_that_record_the_previous_champion_is_the_newest_promoted_before_it():
    """A champion whose decision is still being written, or a retried promotion that recorded
    itself, falls back to the promotion history."""
    history = [VersionRecord(1, promoted=True), VersionRecord(2, promoted=True, compared_with=1), VersionRecord(3)]
    assert previous_champion(4, [*history, VersionRecord(4, decided=False)]) == 2
    assert previous_champion(4, [*history, VersionRecord(4, promoted=True, compared_with=4)]) == 2
    assert previous_champion(1, history) is None
    assert previous_champion(None, history) is None
