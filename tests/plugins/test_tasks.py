"""The built-in tasks: date, date-formats and reverse."""

from __future__ import annotations

import calendar
from datetime import date, datetime

import pytest

from attnlab.plugins.builtin.date_formats_task import DateFormatsTask
from attnlab.plugins.builtin.date_task import DateTask
from attnlab.plugins.builtin.reverse_task import ReverseTask

MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
]  # fmt: skip
# Target positions of each field in YYYY年MM月DD日.
FIELDS = {"year": range(0, 4), "month": range(5, 7), "day": range(8, 10)}


def all_tasks():
    return [DateTask(), DateFormatsTask(), ReverseTask()]


def parse_target(target: str) -> date:
    return datetime.strptime(target, "%Y年%m月%d日").date()


def check_date_alignment(source: str, target: str, alignment) -> None:
    """Each digit's aligned source text is that digit, the whole short field or the month name."""
    assert len(alignment) == len(target)
    day = parse_target(target)
    values = {"year": day.year, "month": day.month, "day": day.day}
    for field, positions in FIELDS.items():
        for i in positions:
            span = alignment[i]
            assert span and list(span) == list(range(span[0], span[-1] + 1))  # contiguous
            text = "".join(source[p] for p in span)
            if text.isdigit():
                assert text == target[i] or int(text) == values[field] % 10 ** len(text), (source, target, i, text)
            else:
                name = MONTHS[day.month - 1]
                assert field == "month" and text in (name, name[:3])
    for i in (4, 7, 10):
        assert alignment[i] == ()


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: type(t).__name__)
def test_same_seed_same_examples(task):
    assert task.generate(50, seed=7) == task.generate(50, seed=7)
    assert task.generate(50, seed=7) != task.generate(50, seed=8)


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: type(t).__name__)
def test_alphabets_and_lengths(task):
    for ex in task.generate(500, seed=1):
        assert set(ex.source) <= set(task.source_alphabet)
        assert set(ex.target) <= set(task.target_alphabet)
        assert len(ex.source) <= task.max_source_length
        task.validate_source(ex.source)


@pytest.mark.parametrize("cls", [DateTask, DateFormatsTask])
def test_only_real_dates(cls):
    task = cls(min_year=2000, max_year=2030)
    for ex in task.generate(2000, seed=3):
        day = parse_target(ex.target)  # raises for 31-02 and friends
        assert 2000 <= day.year <= 2030
        if (day.month, day.day) == (2, 29):
            assert calendar.isleap(day.year)
    # 8 Feb 29ths in 11323 days: too rare to count on in 2000 draws, so draw more to see some.
    hits = [parse_target(ex.target) for ex in task.generate(20000, seed=4)]
    feb29 = [d for d in hits if (d.month, d.day) == (2, 29)]
    assert feb29 and all(calendar.isleap(d.year) for d in feb29)


def test_date_seed_example():
    ex = DateTask().render(date(2023, 12, 25))
    assert ex.source == "25-12-2023"
    assert ex.target == "2023年12月25日"
    assert ex.alignment == ((6,), (7,), (8,), (9,), (), (3,), (4,), (), (0,), (1,), ())


def test_date_space_and_lengths():
    assert DateTask().space_size == (date(2030, 12, 31) - date(2000, 1, 1)).days + 1
    assert DateTask(min_year=2024, max_year=2024).space_size == 366
    assert DateTask().max_source_length == 10
    assert DateFormatsTask().space_size == DateTask().space_size


@pytest.mark.parametrize(
    "name, source",
    [
        ("dd-mm-yyyy", "25-12-2023"),
        ("d mon yyyy", "25 Dec 2023"),
        ("month d, yyyy", "December 25, 2023"),
        ("dd/mm/yy", "25/12/23"),
        ("wkd dd.mm.yyyy", "Mon 25.12.2023"),
        ("yyyy-mm-dd", "2023-12-25"),
        ("mm/dd/yyyy", "12/25/2023"),
        ("d month yyyy", "25 December 2023"),
        ("weekday, d month yyyy", "Monday, 25 December 2023"),
        ("dd.mm.yy", "25.12.23"),
    ],
)
def test_formats_render(name, source):
    ex = DateFormatsTask().render(date(2023, 12, 25), name)
    assert ex.source == source
    assert ex.target == "2023年12月25日"
    check_date_alignment(ex.source, ex.target, ex.alignment)


def test_formats_alignment_details():
    task = DateFormatsTask()
    ex = task.render(date(2023, 12, 25), "d mon yyyy")  # 25 Dec 2023
    assert ex.alignment[5] == ex.alignment[6] == (3, 4, 5)
    ex = task.render(date(2023, 12, 25), "dd/mm/yy")  # 25/12/23
    assert ex.alignment[:4] == ((6, 7), (6, 7), (6,), (7,))
    ex = task.render(date(2023, 3, 5), "d.m.yyyy")  # 5.3.2023
    assert ex.source == "5.3.2023"
    assert ex.alignment[5:7] == ((2,), (2,)) and ex.alignment[8:10] == ((0,), (0,))
    ex = task.render(date(2023, 12, 25), "weekday, d month yyyy")
    assert all(p >= len("Monday, ") for span in ex.alignment for p in span)


def test_every_format_is_produced():
    task = DateFormatsTask()
    produced = set()
    for ex in task.generate(2000, seed=5):
        day = parse_target(ex.target)
        for name in task.FORMATS:
            if task.render(day, name).source == ex.source:
                produced.add(name)
    assert produced == set(task.FORMATS)


def test_max_source_length_is_reached():
    task = DateFormatsTask()
    assert task.max_source_length == len("Wednesday, 30 September 2020")
    assert DateFormatsTask(formats=["dd-mm-yyyy"]).max_source_length == 10
    assert DateFormatsTask(min_year=1, max_year=9999).max_source_length == 28


def test_format_subset_and_two_digit_years():
    task = DateFormatsTask(formats=["yyyy-mm-dd", "dd.mm.yy"])
    assert task.formats == ("yyyy-mm-dd", "dd.mm.yy")
    for ex in task.generate(100, seed=2):
        assert len(ex.source) in (8, 10)
    wide = DateFormatsTask(min_year=1990, max_year=2010)
    assert "dd/mm/yy" not in wide.formats and "dd.mm.yy" not in wide.formats
    for ex in wide.generate(300, seed=2):
        check_date_alignment(ex.source, ex.target, ex.alignment)
    with pytest.raises(ValueError, match="dd/mm/yy"):
        DateFormatsTask(min_year=1990, max_year=2010, formats=["dd/mm/yy"])


def test_key_is_target():
    task = DateFormatsTask()
    a = task.render(date(2023, 12, 25), "dd-mm-yyyy")
    b = task.render(date(2023, 12, 25), "month d, yyyy")
    assert task.key(a) == task.key(b) == "2023年12月25日"


@pytest.mark.parametrize("cls", [DateTask, DateFormatsTask])
def test_date_alignment(cls):
    task = cls()
    for ex in task.generate(500, seed=11):
        check_date_alignment(ex.source, ex.target, ex.alignment)


def test_reverse():
    task = ReverseTask()
    lengths = set()
    for ex in task.generate(500, seed=9):
        assert ex.target == ex.source[::-1]
        assert len(ex.alignment) == len(ex.target)
        for i, span in enumerate(ex.alignment):
            assert span == (len(ex.source) - 1 - i,)
            assert ex.source[span[0]] == ex.target[i]
        lengths.add(len(ex.source))
    assert lengths == set(range(5, 21))
    assert task.max_source_length == 20
    assert task.space_size is None
    assert ReverseTask(min_length=1, max_length=2, alphabet="ab").space_size == 2 + 4
    small = ReverseTask(min_length=3, max_length=3, alphabet="xyz")
    assert small.source_alphabet == "xyz"
    assert all(set(ex.source) <= set("xyz") for ex in small.generate(50, seed=0))


@pytest.mark.parametrize(
    "make, bad",
    [
        (lambda: DateTask(min_year=2030, max_year=2000), "2030"),
        (lambda: DateTask(min_year=0), "0"),
        (lambda: DateFormatsTask(max_year=10000), "10000"),
        (lambda: DateTask(min_year="2000"), "'2000'"),
        (lambda: DateFormatsTask(min_year=2031), "2031"),
        (lambda: DateFormatsTask(formats=["dd-mm-yyyy", "nope"]), "nope"),
        (lambda: DateFormatsTask(formats=[]), r"\[\]"),
        (lambda: ReverseTask(min_length=-3), "-3"),
        (lambda: ReverseTask(max_length=0), "0"),
        (lambda: ReverseTask(min_length=9, max_length=4), "9"),
        (lambda: ReverseTask(alphabet="aa"), "'aa'"),
        (lambda: ReverseTask(alphabet=""), "''"),
        (lambda: DateTask(colour="red"), "colour"),
        (lambda: DateFormatsTask(colour="red"), "colour"),
        (lambda: ReverseTask(colour="red"), "colour"),
    ],
)
def test_option_errors(make, bad):
    with pytest.raises(ValueError, match=bad):
        make()


def test_unknown_format_lists_known_ones():
    with pytest.raises(ValueError, match="yyyy-mm-dd"):
        DateFormatsTask(formats=["nope"])


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: type(t).__name__)
def test_validate_source_rejects(task):
    with pytest.raises(ValueError, match="empty"):
        task.validate_source("")
    with pytest.raises(ValueError, match="@"):
        task.validate_source("12@34")
