"""The service commands' wait limit."""

import pytest

from attnlab.lab.service_options import timeout_problem


@pytest.mark.parametrize("seconds", [0.0, -5.0, float("nan"), float("inf"), float("-inf")])
def test_no_wait_limit_is_refused_naming_the_value_and_the_fix(seconds):
    assert timeout_problem(seconds) == f"--timeout {seconds}: give a positive number of seconds to wait for the servers, e.g. --timeout 180"


def test_a_positive_finite_wait_is_taken():
    assert timeout_problem(0.5) is None and timeout_problem(180.0) is None


def test_progress_shows_at_once_then_each_second_in_a_terminal():
    from attnlab.lab.service_options import progress_due

    assert progress_due(0.0, None, interactive=True) and progress_due(0.2, None, interactive=False)
    assert not progress_due(1.9, 1.1, interactive=True) and progress_due(2.0, 1.9, interactive=True)


def test_progress_outside_a_terminal_is_one_line_every_ten_seconds():
    from attnlab.lab.service_options import PROGRESS_EVERY, progress_due

    assert PROGRESS_EVERY == 10.0
    assert not progress_due(9.9, 0.0, interactive=False) and progress_due(10.0, 0.0, interactive=False)


def test_the_waiting_and_not_answering_lines_name_the_server_the_bound_the_log_and_the_fix():
    from attnlab.lab.service_options import not_answering_line, waiting_line

    assert waiting_line("MLflow UI", "http://127.0.0.1:5000", 12.4) == "waiting for the MLflow UI at http://127.0.0.1:5000 (12 s)"
    line = not_answering_line("MLflow UI", "http://127.0.0.1:5000", 0.5, "/tmp/ui.log")
    assert line == (
        "the MLflow UI at http://127.0.0.1:5000 did not answer within 0.5 s (--timeout); it was stopped. Its log: /tmp/ui.log. "
        "Read its last lines, then run again with a longer wait, e.g. --timeout 180"
    )
    assert not_answering_line("MLflow UI", "u", 300.0, "l").endswith("--timeout 600")
