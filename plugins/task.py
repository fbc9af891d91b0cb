"""The task contract: deterministic (source, target, alignment) examples from a seed.

A task plugin subclasses :class:`Task` and is registered under ``attnlab.tasks``.

- **Options**: ``__init__(**options)``: declare them as keyword parameters with defaults and
  pass ``**options`` on to ``super().__init__``, which rejects unknown names listing yours.
  Values come from ``task_options`` / ``test_task_options`` or ``-o task.NAME=VALUE`` and arrive
  YAML-typed (``-o task.max_length=30`` is the int 30).
- **Alphabets**: the class (or instance) attributes ``source_alphabet`` and ``target_alphabet``
  are strings holding every character the task can produce on each side; the vocabularies are
  built from them, and a user's input is checked against ``source_alphabet``.
- **sample(rng) -> Example(source, target, alignment)**: draw only from the ``random.Random``
  given, so ``generate(n, seed)`` gives the same examples for the same seed. The source is a
  non-empty string.
- **Alignment**: one entry per target character, in order, and none for EOS; each entry is a
  tuple of 0-based indices into the source (the characters it comes from). An empty entry means
  the character comes from no source position (``年`` in the date task's targets) and is left
  out of the alignment accuracy. ``alignment=None`` means unknown: the example counts for every
  metric but the alignment ones.
- **max_source_length** is a property (``@property``), not a method: the longest source the
  task produces. ``space_size`` (a property too) says how many distinct keys exist, or None;
  :meth:`Task.key` says which examples must stay in one split.
- **check_source(text) -> str | None** (optional): the reason ``text`` is not a valid source of
  the task, or None. The default refuses empty text, text longer than ``max_source_length`` and
  characters outside ``source_alphabet``; the date tasks also refuse dates that do not exist and
  dates outside their years (min_year..max_year: the model never saw them).
  ``attnlab predict`` and the served model refuse such inputs (exit 2 / HTTP 400) before decoding;
  every source ``sample`` draws must pass it (the checks below try it).
- **Checks**: every model built probes its task (20 examples); ``attnlab plugins --check`` and
  ``attnlab.plugins.testing.check_task(MyTask)`` run the same checks.
"""

from __future__ import annotations

import random
from typing import Any, NamedTuple

from attnlab.plugins.options import Configurable, reject_unknown

#: For each target character, the source positions it comes from (empty: from none).
Alignment = tuple[tuple[int, ...], ...]


class Example(NamedTuple):
    """source and target strings; alignment has one entry per target character, or is None."""

    source: str
    target: str
    alignment: Alignment | None


class Task(Configurable):
    """Base class of every task plugin.

    Subclasses set the class attributes ``source_alphabet`` and ``target_alphabet`` (every
    character the task can produce on each side) and implement :meth:`sample`.

    Args:
        **options: task-specific options; unknown ones are an error.
    """

    source_alphabet: str = ""
    target_alphabet: str = ""

    def __init__(self, **options: Any) -> None:
        reject_unknown(type(self), options, self._fixed)

    def sample(self, rng: random.Random) -> Example:
        """One random example drawn with ``rng``."""
        raise NotImplementedError

    def key(self, example: Example) -> str:
        """The value an example stands for; examples with equal keys stay in one data split."""
        return example.target

    @property
    def space_size(self) -> int | None:
        """How many distinct keys the task can produce, or None when it is practically endless."""
        return None

    @property
    def max_source_length(self) -> int:
        """The longest source this task produces."""
        raise NotImplementedError

    def generate(self, n: int, seed: int) -> list[Example]:
        """``n`` examples, the same ones for the same seed."""
        rng = random.Random(seed)
        return [self.sample(rng) for _ in range(n)]

    def check_source(self, text: str) -> str | None:
        """Why ``text`` cannot be a source of this task, or None when it can.

        The optional validation hook: ``attnlab predict`` and the served model refuse an input
        with this reason before decoding it. The reason is phrased to follow the input, as in
        ``'31-02-2023' is not a real date: February 2023 has 28 days``. The default refuses an
        empty text, one longer than :attr:`max_source_length` and characters outside
        :attr:`source_alphabet`; a task that knows more (real calendar dates, a grammar)
        overrides it and calls ``super().check_source(text)`` first.
        """
        if not text:
            return "is no source: the source is empty; give at least one character"
        longest = self.max_source_length
        if len(text) > longest:
            return f"has {len(text)} characters; this task's sources have at most {longest}"
        foreign = sorted({ch for ch in text if ch not in self.source_alphabet})
        if foreign:
            return f"has character(s) {''.join(foreign)!r} outside this task's alphabet {self.source_alphabet!r}"
        return None

    def validate_source(self, text: str) -> None:
        """Raise ValueError naming ``text`` and the reason :meth:`check_source` gives, if any."""
        reason = self.check_source(text)
        if reason is not None:
            raise ValueError(f"{shown(text)} {reason}")


def shown(text: str, width: int = 40) -> str:
    """``text`` quoted for a one-line message, cut to ``width`` characters."""
    return repr(text) if len(text) <= width else repr(text[:width]) + "..."
