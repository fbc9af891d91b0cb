"""Dates written as text, for the built-in date tasks: the source formats' fields, reading a
source back into a date (and saying why it names none), rendering a date with its alignment, and
the base the date tasks share (a validated year range, uniform draws)."""

from __future__ import annotations

import calendar
import random
import re
from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

from attnlab.plugins.task import Alignment, Example, Task

DIGITS = "0123456789"
_TARGET_ALPHABET = DIGITS + "年月日"
# English names, spelled out rather than taken from `calendar`, whose names follow the locale.
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: Days in 400 years: dates and weekdays repeat after it.
GREGORIAN_CYCLE = 146097

#: Source-format fields: token -> (date field or None, numeric?, render).
FIELDS: dict[str, tuple[str | None, bool, Callable[[date], str]]] = {
    "dd": ("day", True, lambda d: f"{d.day:02d}"),
    "d": ("day", True, lambda d: str(d.day)),
    "mm": ("month", True, lambda d: f"{d.month:02d}"),
    "m": ("month", True, lambda d: str(d.month)),
    "mon": ("month", False, lambda d: _MONTHS[d.month - 1][:3]),
    "month": ("month", False, lambda d: _MONTHS[d.month - 1]),
    "yyyy": ("year", True, lambda d: f"{d.year:04d}"),
    "yy": ("year", True, lambda d: f"{d.year % 100:02d}"),
    "wkd": (None, False, lambda d: _WEEKDAYS[d.weekday()][:3]),
    "weekday": (None, False, lambda d: _WEEKDAYS[d.weekday()]),
}


#: Source-format field token -> the pattern it matches (a named group per date field).
_PATTERNS = {
    "dd": r"(?P<day>\d{2})",
    "d": r"(?P<day>\d{1,2})",
    "mm": r"(?P<month>\d{2})",
    "m": r"(?P<month>\d{1,2})",
    "mon": "(?P<month>" + "|".join(m[:3] for m in _MONTHS) + ")",
    "month": "(?P<month>" + "|".join(_MONTHS) + ")",
    "yyyy": r"(?P<year>\d{4})",
    "yy": r"(?P<year>\d{2})",
    "wkd": "(?P<weekday>" + "|".join(w[:3] for w in _WEEKDAYS) + ")",
    "weekday": "(?P<weekday>" + "|".join(_WEEKDAYS) + ")",
}


def pattern(pieces: tuple[str, ...]) -> re.Pattern[str]:
    """The regular expression of a source format (see :attr:`FORMATS`)."""
    return re.compile("".join(_PATTERNS.get(piece, re.escape(piece)) for piece in pieces))


def year_of(fields: dict[str, str], two_digit_year: bool) -> int:
    """The year of the matched fields of a source format (a 2-digit year reads as 2000 + yy)."""
    return int(fields["year"]) + (2000 if two_digit_year else 0)


def date_problem(fields: dict[str, str], two_digit_year: bool) -> str | None:
    """Why the matched fields of a source format name no real date, or None."""
    month_text = fields["month"]
    names = [m[: len(month_text)] for m in _MONTHS]
    month = names.index(month_text) + 1 if month_text in names else int(month_text)
    year, day = year_of(fields, two_digit_year), int(fields["day"])
    if year < 1:
        return "is not a real date: there is no year 0 (years 1-9999)"
    if not 1 <= month <= 12:
        return f"is not a real date: there is no month {month} (months 01-12)"
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        return f"is not a real date: {_MONTHS[month - 1]} {year:04d} has no day {day} (it has {days} days)"
    weekday = fields.get("weekday")
    if weekday is not None:
        actual = _WEEKDAYS[date(year, month, day).weekday()]
        if not actual.startswith(weekday):
            given = next(w for w in _WEEKDAYS if w.startswith(weekday))
            return f"is not a real date: {_MONTHS[month - 1]} {day}, {year:04d} is a {actual}, not a {given}"
    return None


def _check_year(name: str, value: object) -> int:
    """``value`` when it is an integer year in 1..9999, else ValueError naming option ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 9999:
        raise ValueError(f"{name} must be an integer in 1..9999, got {value!r}")
    return value


def _check_years(min_year: object, max_year: object) -> tuple[date, int]:
    """Validate a year range; return its first date and its number of days."""
    low, high = _check_year("min_year", min_year), _check_year("max_year", max_year)
    if low > high:
        raise ValueError(f"min_year ({low}) must be <= max_year ({high})")
    first = date(low, 1, 1)
    return first, (date(high, 12, 31) - first).days + 1


def _number(span: range, numeric: bool, width: int) -> Alignment:
    """Alignment of a ``width``-digit target number to its source span. Source digits are matched
    right-aligned; target digits the source lacks (a 2-digit year's century, a 1-digit day's
    leading zero) and every digit of a named field come from the whole span."""
    whole = tuple(span)
    lead = width - len(span) if numeric else width
    return tuple(whole if i < lead else (span[i - lead],) for i in range(width))


def render(day: date, pieces: tuple[str, ...]) -> Example:
    """The example for ``day``: source built from ``pieces`` (field tokens or literal text)."""
    source = ""
    spans: dict[str, tuple[range, bool]] = {}
    for piece in pieces:
        text = piece
        if piece in FIELDS:
            field, numeric, show = FIELDS[piece]
            text = show(day)
            if field:
                spans[field] = (range(len(source), len(source) + len(text)), numeric)
        source += text
    target = f"{day.year:04d}年{day.month:02d}月{day.day:02d}日"
    alignment = (*_number(*spans["year"], 4), (), *_number(*spans["month"], 2), (),
                 *_number(*spans["day"], 2), ())  # fmt: skip
    return Example(source, target, alignment)


def alphabet(formats: dict[str, tuple[str, ...]]) -> str:
    """Every character the formats can produce, sorted."""
    year = [date(2000, 1, 1) + timedelta(k) for k in range(366)]  # every month and weekday
    chars: set[str] = set()
    for piece in {p for pieces in formats.values() for p in pieces}:
        if piece not in FIELDS:
            chars.update(piece)
        elif FIELDS[piece][1]:
            chars.update(DIGITS)
        else:
            chars.update(ch for d in year for ch in FIELDS[piece][2](d))
    return "".join(sorted(chars))


#: Format name -> pieces: field tokens (dd, d, mm, m, mon, month, yyyy, yy, wkd, weekday) or
#: literal text.
FORMATS: dict[str, tuple[str, ...]] = {
    "dd-mm-yyyy": ("dd", "-", "mm", "-", "yyyy"),  # 25-12-2023
    "d mon yyyy": ("d", " ", "mon", " ", "yyyy"),  # 25 Dec 2023
    "month d, yyyy": ("month", " ", "d", ", ", "yyyy"),  # December 25, 2023
    "mon d, yyyy": ("mon", " ", "d", ", ", "yyyy"),  # Dec 25, 2023
    "dd/mm/yy": ("dd", "/", "mm", "/", "yy"),  # 25/12/23
    "wkd dd.mm.yyyy": ("wkd", " ", "dd", ".", "mm", ".", "yyyy"),  # Mon 25.12.2023
    "yyyy-mm-dd": ("yyyy", "-", "mm", "-", "dd"),  # 2023-12-25
    "mm/dd/yyyy": ("mm", "/", "dd", "/", "yyyy"),  # 12/25/2023
    "d.m.yyyy": ("d", ".", "m", ".", "yyyy"),  # 5.3.2023
    "d month yyyy": ("d", " ", "month", " ", "yyyy"),  # 25 December 2023
    "weekday, d month yyyy": ("weekday", ", ", "d", " ", "month", " ", "yyyy"),
    "dd.mm.yy": ("dd", ".", "mm", ".", "yy"),  # 25.12.23
}


class DateRange(Task):
    """Shared base of the date tasks: a validated year range and uniform date draws."""

    target_alphabet = _TARGET_ALPHABET

    def __init__(self, min_year: int = 2000, max_year: int = 2030, **options: Any) -> None:
        super().__init__(**options)
        self._first, self._days = _check_years(min_year, max_year)
        self.min_year, self.max_year = min_year, max_year

    def _draw(self, rng: random.Random) -> date:
        return self._first + timedelta(days=rng.randrange(self._days))

    def year_problem(self, year: int) -> str | None:
        """Why a real date of ``year`` is refused: a year outside min_year..max_year, which a
        model of this task never saw in training (it answers such dates with confident nonsense);
        None inside the range. The reason names the range and the option that widens it."""
        if self.min_year <= year <= self.max_year:
            return None
        option = "min_year" if year < self.min_year else "max_year"
        return (
            f"is in {year:04d}, outside the years the model was trained on ({self.min_year:04d}-"
            f"{self.max_year:04d}); train one with -o task.{option}={year} to answer it"
        )

    @property
    def space_size(self) -> int:
        return self._days
