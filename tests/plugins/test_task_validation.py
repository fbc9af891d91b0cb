"""The task contract's validation hook, Task.check_source: the default (empty text, foreign
characters, longer than the task's sources) and the date tasks' real-calendar checks."""

from __future__ import annotations

import random
from datetime import date
from types import SimpleNamespace

import pytest

from attnlab.data.sources import config_tasks, first_problem
from attnlab.plugins import Example, Task
from attnlab.plugins.builtin.date_formats_task import DateFormatsTask
from attnlab.plugins.builtin.date_task import DateTask
from attnlab.plugins.builtin.dates import FIELDS
from attnlab.plugins.builtin.reverse_task import ReverseTask


@pytest.mark.parametrize(
    "task",
    [DateTask(), DateFormatsTask(), ReverseTask(), ReverseTask(min_length=1, max_length=300, alphabet="ab")],
    ids=["date", "date-formats", "reverse", "reverse-ab-300"],
)
def test_every_source_a_task_draws_passes_its_own_check(task):
    for example in task.generate(2000, seed=3):
        assert task.check_source(example.source) is None, example.source


@pytest.mark.parametrize(
    "text,needle",
    [
        ("31-02-2023", "February 2023 has no day 31"),
        ("29-02-2023", "February 2023 has no day 29"),
        ("99-99-2023", "no month 99"),
        ("00-01-2023", "January 2023 has no day 0"),
        ("31-04-2023", "April 2023 has no day 31"),
        ("01-01-0000", "no year 0"),
        ("1-1-2023", "DD-MM-YYYY"),
        ("2023-12-25", "DD-MM-YYYY"),
        ("1" * 5000, "5000 characters"),
        ("25/12/2023", "'/'"),
        ("", "empty"),
    ],
)
def test_date_refuses_what_is_not_a_real_date(text, needle):
    reason = DateTask().check_source(text)
    assert reason is not None and needle in reason and "\n" not in reason
    with pytest.raises(ValueError, match="'"):
        DateTask().validate_source(text)


@pytest.mark.parametrize("text", ["29-02-2024", "25-12-2023", "01-01-2000", "31-12-2030", "29-02-2000"])
def test_date_accepts_real_dates_of_its_years(text):
    assert DateTask().check_source(text) is None


@pytest.mark.parametrize(
    "text,year,option",
    [("31-01-1999", "1999", "task.min_year=1999"), ("28-06-1954", "1954", "task.min_year=1954"),
     ("01-01-2031", "2031", "task.max_year=2031"), ("01-01-0001", "0001", "task.min_year=1")],
)  # fmt: skip
def test_date_refuses_years_the_model_was_not_trained_on(text, year, option):
    reason = DateTask().check_source(text)
    assert reason is not None and "\n" not in reason
    assert f"is in {year}" in reason and "(2000-2030)" in reason and f"-o {option}" in reason


def test_the_years_follow_the_tasks_options():
    assert DateTask(min_year=1900, max_year=2100).check_source("28-06-1954") is None
    assert "(1900-2100)" in DateTask(min_year=1900, max_year=2100).check_source("01-01-2101")
    assert DateTask(min_year=1).check_source("01-01-0001") is None


@pytest.mark.parametrize("name", list(DateFormatsTask.FORMATS))
def test_date_formats_refuses_years_outside_its_range_in_every_format(name):
    task = DateFormatsTask(formats=[name])
    late = task.render(date(2045, 12, 25), name).source
    assert "(2000-2030)" in task.check_source(late) and "-o task.max_year=2045" in task.check_source(late)
    if "yy" not in task.FORMATS[name]:
        early = task.render(date(1999, 12, 25), name).source
        assert "-o task.min_year=1999" in task.check_source(early)
        assert DateFormatsTask(min_year=1999, formats=[name]).check_source(early) is None


def test_a_model_answers_the_years_of_its_test_task_too():
    task, test_task = config_tasks({"task": "date", "test_task_options": {"min_year": 1990}})
    assert first_problem(["31-01-1999"], task, test_task) is None
    assert "'31-01-1989' is in 1989" in first_problem(["31-01-1999", "31-01-1989"], task, test_task)


def _written(pieces: tuple[str, ...], day) -> str:
    return "".join(FIELDS[p][2](day) if p in FIELDS else p for p in pieces)


@pytest.mark.parametrize("name", list(DateFormatsTask.FORMATS))
def test_date_formats_checks_each_of_its_formats(name):
    task = DateFormatsTask(formats=[name])
    pieces = task.FORMATS[name]
    assert task.check_source(_written(pieces, date(2024, 2, 29))) is None
    # 31 April 2023 written in this format, with the weekday of 30 April 2023
    impossible = SimpleNamespace(year=2023, month=4, day=31, weekday=lambda: date(2023, 4, 30).weekday())
    reason = task.check_source(_written(pieces, impossible))
    assert reason is not None and "April 2023 has no day 31" in reason
    leap = SimpleNamespace(year=2023, month=2, day=29, weekday=lambda: date(2023, 2, 28).weekday())
    assert "February 2023 has no day 29" in task.check_source(_written(pieces, leap))


def test_date_formats_refuses_a_weekday_that_is_not_the_dates_own():
    task = DateFormatsTask()
    assert task.check_source("Mon 25.12.2023") is None
    assert "is a Monday, not a Tuesday" in task.check_source("Tue 25.12.2023")
    assert "is a Monday, not a Friday" in task.check_source("Friday, 25 December 2023")


def test_date_formats_names_its_formats_for_text_in_none_of_them():
    task = DateFormatsTask(formats=["yyyy-mm-dd", "d mon yyyy"])
    assert task.check_source("25 Dec 2023") is None
    reason = task.check_source("25-12-2023")
    assert "none of this task's formats: yyyy-mm-dd, d mon yyyy" in reason


def test_default_check_is_alphabet_and_longest_source():
    class Letters(Task):
        source_alphabet = target_alphabet = "ab"

        def sample(self, rng: random.Random) -> Example:
            return Example("ab", "ba", None)

        @property
        def max_source_length(self) -> int:
            return 4

    assert Letters().check_source("abba") is None
    assert "5 characters" in Letters().check_source("ababa") and "at most 4" in Letters().check_source("ababa")
    assert "'c'" in Letters().check_source("abc")
    assert "empty" in Letters().check_source("")


def test_a_model_answers_sources_of_its_test_task_too():
    config = {"task": "reverse", "task_options": {"max_length": 10}, "test_task_options": {"max_length": 20}}
    task, test_task = config_tasks(config)
    assert first_problem(["1" * 15], task, test_task) is None
    assert "21 characters" in first_problem(["1" * 15, "1" * 21], task, test_task)
    assert config_tasks({"task": "date"})[1] is None


def test_the_contract_check_refuses_a_task_that_refuses_its_own_sources():
    from attnlab.plugins import PluginError
    from attnlab.plugins.testing import check_task

    class Picky(DateTask):
        def check_source(self, text: str) -> str | None:
            return "is never good enough"

    check_task(DateTask)
    with pytest.raises(PluginError, match=r"check_source\('.*'\).*is never good enough"):
        check_task(Picky)
