"""The date task: ``25-12-2023`` -> ``2023年12月25日``."""

from __future__ import annotations

import random
from datetime import date

from attnlab.plugins.builtin.dates import FORMATS, DateRange, date_problem, pattern, render
from attnlab.plugins.task import Example


class DateTask(DateRange):
    """``25-12-2023`` -> ``2023年12月25日``, real dates drawn uniformly from min_year..max_year.

    Each target digit aligns with its own source digit; 年, 月 and 日 align with nothing.
    """

    source_alphabet = "0123456789-"

    def render(self, day: date) -> Example:
        """The example for ``day``."""
        return render(day, FORMATS["dd-mm-yyyy"])

    def sample(self, rng: random.Random) -> Example:
        return self.render(self._draw(rng))

    def check_source(self, text: str) -> str | None:
        """Refuses what :meth:`Task.check_source` refuses, text not shaped DD-MM-YYYY, dates
        that do not exist (``31-02-2023``, ``29-02-2023``; ``29-02-2024`` is a real date) and
        dates outside min_year..max_year (:meth:`year_problem`: ``31-01-1999`` by default)."""
        problem = super().check_source(text)
        if problem is not None:
            return problem
        found = pattern(FORMATS["dd-mm-yyyy"]).fullmatch(text)
        if found is None:
            return "is not a date written DD-MM-YYYY (e.g. 25-12-2023)"
        fields = found.groupdict()
        return date_problem(fields, two_digit_year=False) or self.year_problem(int(fields["year"]))

    @property
    def max_source_length(self) -> int:
        return 10
