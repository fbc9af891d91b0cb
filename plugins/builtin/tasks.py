"""Built-in tasks, one module each: date (DD-MM-YYYY -> YYYY年MM月DD日), date-formats (many source
formats, same target) and reverse (digit strings reversed). Every alignment is known by
construction."""

from __future__ import annotations

from attnlab.plugins.builtin.date_formats_task import DateFormatsTask
from attnlab.plugins.builtin.date_task import DateTask
from attnlab.plugins.builtin.reverse_task import MAX_REVERSE_LENGTH, ReverseTask

__all__ = ["MAX_REVERSE_LENGTH", "DateFormatsTask", "DateTask", "ReverseTask"]
