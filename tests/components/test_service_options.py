"""The service commands' wait limit."""

import pytest

from attnlab.service_options import timeout_problem


@pytest.mark.parametrize("seconds", [0.0, -5.0, float("nan"), float("inf"), float("-inf")])
def test_no_wait_limit_is_refused_naming_the_value_and_the_fix(seconds):
    assert timeout_problem(seconds) == f"--timeout {seconds}: give a positive number of seconds to wait for the servers, e.g. --timeout 180"


def test_a_positive_finite_wait_is_taken():
    assert timeout_problem(0.5) is None and timeout_problem(180.0) is None
