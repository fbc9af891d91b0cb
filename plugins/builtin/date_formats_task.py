"""The date-formats task: human-readable dates in many formats -> ``YYYY年MM月DD日``."""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from attnlab.plugins.builtin.dates import (
    FORMATS,
    GREGORIAN_CYCLE,
    DateRange,
    alphabet,
    date_problem,
    pattern,
    render,
    year_of,
)
from attnlab.plugins.task import Example


class DateFormatsTask(DateRange):
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
    FORMATS: dict[str, tuple[str, ...]] = FORMATS
    source_alphabet = alphabet(FORMATS)

    def __init__(
        self,
        min_year: int = 2000,
        max_year: int = 2030,
        formats: list[str] | None = None,
        **options: Any,
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
        return render(day, self.FORMATS[format_name])

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
            found = pattern(pieces).fullmatch(text)
            if found is not None:
                problem = date_problem(found.groupdict(), two_digit_year="yy" in pieces)
                if problem is None:
                    problem = self.year_problem(year_of(found.groupdict(), two_digit_year="yy" in pieces))
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
            for offset in range(min(self._days, GREGORIAN_CYCLE)):
                day = self._first + timedelta(days=offset)
                seen.setdefault((day.day >= 10, day.month, day.weekday()), day)
            self._max_length = max(len(self.render(d, f).source) for d in seen.values() for f in self.formats)
        return self._max_length
