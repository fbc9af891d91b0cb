"""The served model's row limit and the shape of its refusals."""

from attnlab.lab.serving import LONGEST_REASON, MAX_ROWS, one_sentence, rows_problem


def test_a_request_up_to_the_limit_is_taken():
    assert rows_problem(1) is None and rows_problem(MAX_ROWS) is None


def test_a_request_over_the_limit_names_its_size_the_limit_and_the_fix():
    problem = rows_problem(400_000)
    assert problem == (
        f"the request holds 400,000 rows and the served model takes at most {MAX_ROWS:,} rows per request; "
        f"send them in requests of {MAX_ROWS:,} rows or fewer"
    )
    assert rows_problem(11, limit=10) is not None and rows_problem(10, limit=10) is None


def test_a_reason_becomes_one_line_of_bounded_length():
    assert one_sentence("'x' is\n  not\ta date") == "'x' is not a date"
    cut = one_sentence("word " * 1000)
    assert len(cut) == LONGEST_REASON and cut.endswith("...") and "\n" not in cut
