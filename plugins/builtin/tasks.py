"""Built-in tasks: date (DD-MM-YYYY -> YYYY年MM月DD日), date-formats (many source formats, same
target) and reverse (digit strings reversed). Every alignment is known by construction."""

from __future__ import annotations

import calendar
import random
import re
from datetime import date, timedelta

from attnlab.plugins.options import require_positive_int
from attnlab.plugins.task import Alignment, Example, Task

_DIGITS = "0123456789"
_TARGET_ALPHABET = _DIGITS + "年月日"
# English names, spelled out rather than taken from `calendar`, whose names follow the locale.
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_GREGORIAN_CYCLE = 146097  # days in 400 years: dates and weekdays repeat after it
#: The longest string ``reverse`` draws: the built-in transformer encoder's and decoder's default
#: max_length. The rnn decoder runs one Python step per character, so longer strings would train
#: for hours per epoch; ``-o task.max_length=1000000000`` grew to 5 GB before it was stopped.
MAX_REVERSE_LENGTH = 512

#: Source-format fields: token -> (date field or None, numeric?, render).
_FIELDS = {
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


def _pattern(pieces: tuple[str, ...]) -> re.Pattern[str]:
    """The regular expression of a source format (see :attr:`DateFormatsTask.FORMATS`)."""
    return re.compile("".join(_PATTERNS.get(piece, re.escape(piece)) for piece in pieces))


def _year(fields: dict[str, str], two_digit_year: bool) -> int:
    """The year of the matched fields of a source format (a 2-digit year reads as 2000 + yy)."""
    return int(fields["year"]) + (2000 if two_digit_year else 0)


def _date_problem(fields: dict[str, str], two_digit_year: bool) -> str | None:
    """Why the matched fields of a source format name no real date, or None."""
    month_text = fields["month"]
    names = [m[: len(month_text)] for m in _MONTHS]
    month = names.index(month_text) + 1 if month_text in names else int(month_text)
    year, day = _year(fields, two_digit_year), int(fields["day"])
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


def _check_years(min_year: object, max_year: object) -> tuple[date, int]:
    """Validate a year range; return its first date and its number of days."""
    for name, value in (("min_year", min_year), ("max_year", max_year)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 9999:
            raise ValueError(f"{name} must be an integer in 1..9999, got {value!r}")
    if min_year > max_year:
        raise ValueError(f"min_year ({min_year}) must be <= max_year ({max_year})")
    first = date(min_year, 1, 1)
    return first, (date(max_year, 12, 31) - first).days + 1


def _number(span: range, numeric: bool, width: int) -> Alignment:
    """Alignment of a ``width``-digit target number to its source span. Source digits are matched
    right-aligned; target digits the source lacks (a 2-digit year's century, a 1-digit day's
    leading zero) and every digit of a named field come from the whole span."""
    whole = tuple(span)
    lead = width - len(span) if numeric else width
    return tuple(whole if i < lead else (span[i - lead],) for i in range(width))


def _render(day: date, pieces: tuple[str, ...]) -> Example:
    """The example for ``day``: source built from ``pieces`` (field tokens or literal text)."""
    source, spans = "", {}
    for piece in pieces:
        text = piece
        if piece in _FIELDS:
            field, numeric, show = _FIELDS[piece]
            text = show(day)
            if field:
                spans[field] = (range(len(source), len(source) + len(text)), numeric)
        source += text
    target = f"{day.year:04d}年{day.month:02d}月{day.day:02d}日"
    alignment = (*_number(*spans["year"], 4), (), *_number(*spans["month"], 2), (),
                 *_number(*spans["day"], 2), ())  # fmt: skip
    return Example(source, target, alignment)


def _alphabet(formats: dict[str, tuple[str, ...]]) -> str:
    """Every character the formats can produce, sorted."""
    year = [date(2000, 1, 1) + timedelta(k) for k in range(366)]  # every month and weekday
    chars: set[str] = set()
    for piece in {p for pieces in formats.values() for p in pieces}:
        if piece not in _FIELDS:
            chars.update(piece)
        elif _FIELDS[piece][1]:
            chars.update(_DIGITS)
        else:
            chars.update(ch for d in year for ch in _FIELDS[piece][2](d))
    return "".join(sorted(chars))


class _DateRange(Task):
    """Shared base of the date tasks: a validated year range and uniform date draws."""

    target_alphabet = _TARGET_ALPHABET

    def __init__(self, min_year: int = 2000, max_year: int = 2030, **options) -> None:
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


class DateTask(_DateRange):
    """``25-12-2023`` -> ``2023年12月25日``, real dates drawn uniformly from min_year..max_year.

    Each target digit aligns with its own source digit; 年, 月 and 日 align with nothing.
    """

    source_alphabet = "0123456789-"

    def render(self, day: date) -> Example:
        """The example for ``day``."""
        return _render(day, DateFormatsTask.FORMATS["dd-mm-yyyy"])

    def sample(self, rng: random.Random) -> Example:
        return self.render(self._draw(rng))

    def check_source(self, text: str) -> str | None:
        """Refuses what :meth:`Task.check_source` refuses, text not shaped DD-MM-YYYY, dates
        that do not exist (``31-02-2023``, ``29-02-2023``; ``29-02-2024`` is a real date) and
        dates outside min_year..max_year (:meth:`year_problem`: ``31-01-1999`` by default)."""
        problem = super().check_source(text)
        if problem is not None:
            return problem
        found = _pattern(DateFormatsTask.FORMATS["dd-mm-yyyy"]).fullmatch(text)
        if found is None:
            return "is not a date written DD-MM-YYYY (e.g. 25-12-2023)"
        fields = found.groupdict()
        return _date_problem(fields, two_digit_year=False) or self.year_problem(int(fields["year"]))

    @property
    def max_source_length(self) -> int:
        return 10


class DateFormatsTask(_DateRange):
    """Human-readable dates in many formats (one drawn per example) -> ``YYYY年MM月DD日``.

    ``formats`` picks a subset of :attr:`FORMATS` (default: all). Two-digit years read as
    2000 + yy, so the ``yy`` formats are usable only when 2000 <= min_year <= max_year <= 2099:
    outside that range they are skipped by default, and naming one is an error. Month and weekday
    names are English. Alignment: digits to their own source digit, named months to the whole
    name, a 2-digit year's century (and a 1-digit day's or month's leading zero) to the whole
    field; weekdays and separators align with nothing. The key stays the target, so one date in
    different formats never spans two data splits.
    """

    #: Format name -> pieces: field tokens (dd, d, mm, m, mon, month, yyyy, yy, wkd, weekday)
    #: or literal text.
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
    source_alphabet = _alphabet(FORMATS)

    def __init__(
        self,
        min_year: int = 2000,
        max_year: int = 2030,
        formats: list[str] | None = None,
        **options,
    ) -> None:
        super().__init__(min_year, max_year, **options)
        two_digit_ok = 2000 <= min_year and max_year <= 2099
        if formats is None:
            names = [n for n in self.FORMATS if two_digit_ok or "yy" not in self.FORMATS[n]]
        else:
            if isinstance(formats, str) or not isinstance(formats, (list, tuple)) or not formats:
                raise ValueError(f"formats must be a non-empty list of names, got {formats!r}")
            unknown = [n for n in formats if n not in self.FORMATS]
            if unknown:
                raise ValueError(f"unknown format(s) {unknown!r}; known: {', '.join(self.FORMATS)}")
            names = list(dict.fromkeys(formats))
            for name in names:
                if not two_digit_ok and "yy" in self.FORMATS[name]:
                    raise ValueError(
                        f"format {name!r} has a 2-digit year (read as 2000 + yy); it needs "
                        f"2000 <= min_year <= max_year <= 2099, got {min_year}..{max_year}"
                    )
        self.formats: tuple[str, ...] = tuple(names)
        self._max_length: int | None = None

    def render(self, day: date, format_name: str) -> Example:
        """The example for ``day`` written in the format ``format_name`` (a key of FORMATS)."""
        return _render(day, self.FORMATS[format_name])

    def sample(self, rng: random.Random) -> Example:
        day = self._draw(rng)
        return self.render(day, rng.choice(self.formats))

    def check_source(self, text: str) -> str | None:
        """Refuses what :meth:`Task.check_source` refuses, text in none of this task's formats,
        and dates that do not exist in the formats the text is written in (``30 Feb 2024``,
        ``31.04.23``; a weekday must be the date's own) or fall outside min_year..max_year
        (:meth:`year_problem`). Text that reads as a real date of the range in any one of the
        formats is accepted."""
        problem = super().check_source(text)
        if problem is not None:
            return problem
        problems = []
        for name in self.formats:
            pieces = self.FORMATS[name]
            found = _pattern(pieces).fullmatch(text)
            if found is not None:
                problem = _date_problem(found.groupdict(), two_digit_year="yy" in pieces)
                if problem is None:
                    problem = self.year_problem(_year(found.groupdict(), two_digit_year="yy" in pieces))
                if problem is None:
                    return None
                problems.append(problem)
        if problems:
            return problems[0]
        return f"is written in none of this task's formats: {', '.join(self.formats)}"

    @property
    def max_source_length(self) -> int:
        if self._max_length is None:  # over every (month, day, weekday) the range holds
            # A source's length depends on the day's digit count, the month and the weekday only.
            seen: dict[tuple[bool, int, int], date] = {}
            for offset in range(min(self._days, _GREGORIAN_CYCLE)):
                day = self._first + timedelta(days=offset)
                seen.setdefault((day.day >= 10, day.month, day.weekday()), day)
            self._max_length = max(
                len(self.render(d, f).source) for d in seen.values() for f in self.formats
            )
        return self._max_length


class ReverseTask(Task):
    """A random string over ``alphabet`` (length uniform in min_length..max_length) -> reversed.

    Target position i aligns with source position L-1-i. max_length is at most
    MAX_REVERSE_LENGTH (512).
    """

    source_alphabet = target_alphabet = _DIGITS

    def __init__(
        self, min_length: int = 5, max_length: int = 20, alphabet: str = _DIGITS, **options
    ) -> None:
        super().__init__(**options)
        require_positive_int(min_length=min_length, max_length=max_length)
        if min_length > max_length:
            raise ValueError(f"min_length ({min_length}) must be <= max_length ({max_length})")
        if max_length > MAX_REVERSE_LENGTH:
            raise ValueError(f"max_length must be at most {MAX_REVERSE_LENGTH}, got {max_length}")
        if not isinstance(alphabet, str) or not alphabet or len(set(alphabet)) != len(alphabet):
            raise ValueError(
                f"alphabet must be a non-empty string without repeated characters, got {alphabet!r}"
            )
        self.min_length, self.max_length = min_length, max_length
        self.source_alphabet = self.target_alphabet = alphabet

    def sample(self, rng: random.Random) -> Example:
        length = rng.randint(self.min_length, self.max_length)
        source = "".join(rng.choices(self.source_alphabet, k=length))
        alignment = tuple((length - 1 - i,) for i in range(length))
        return Example(source, source[::-1], alignment)

    @property
    def space_size(self) -> int | None:
        """The number of distinct strings, or None above 10**9."""
        total, size = 0, len(self.source_alphabet)
        if size == 1:
            return self.max_length - self.min_length + 1
        for length in range(self.min_length, self.max_length + 1):
            total += size**length
            if total > 10**9:
                return None
        return total

    @property
    def max_source_length(self) -> int:
        return self.max_length
