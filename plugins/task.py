"""The task contract: deterministic (source, target, alignment) examples from a seed.

A task plugin subclasses :class:`Task` and is registered under ``attnlab.tasks``.

- **Options**: ``__init__(**options)``: declare them as keyword parameters with defaults and
  pass ``**options`` on to ``super().__init__``, which rejects unknown names listing yours.
  Values come from ``task_options`` / ``test_task_options`` or ``-o task.NAME=VALUE`` and arrive
  YAML-typed (``-o task.max_length=30`` is the int 30).
- **Tokens**: ``source_tokenization`` and ``target_tokenization`` say how each side's text is
  cut into tokens: ``"characters"`` (the default: every character is a token) or
  ``"whitespace"`` (tokens separated by spaces, as the phonemes ``"P EY1 S T"``). Sources and
  targets are always strings; on a whitespace side tokens are joined by one space.
- **Alphabets**: ``source_alphabet`` and ``target_alphabet`` (class or instance attributes)
  hold every token the task can produce on each side: a string of characters on a character
  side; on a whitespace side a string of whitespace-separated tokens (``"AA AE AH"``) or any
  collection of token strings. The vocabularies are built from them, and a user's input is
  checked against ``source_alphabet``.
- **sample(rng) -> Example(source, target, alignment)**: draw only from the ``random.Random``
  given, so ``generate(n, seed)`` gives the same examples for the same seed. The source holds
  at least one token.
- **Alignment**: one entry per target token, in order, and none for EOS; each entry is a tuple
  of 0-based indices into the source's tokens (the ones it comes from). An empty entry means
  the token comes from no source position (``年`` in the date task's targets) and is left out
  of the alignment accuracy. ``alignment=None`` means unknown: the example counts for every
  metric but the alignment ones.
- **corpus() -> list[Example] | None** (optional): a task with fixed data (a dictionary, a
  user's file) returns all of its examples; a source may appear in several (alternative
  targets, each a correct reference). The splits are then made by a hash of :meth:`Task.key`
  (the source, for such a task), not drawn: the test split is the same for every seed.
  ``sample`` still draws single examples from it for the checks.
- **max_source_length** is a property (``@property``), not a method: the most tokens a source
  of the task has. ``space_size`` (a property too) says how many distinct keys exist, or None;
  :meth:`Task.key` says which examples must stay in one split.
- **default_split** (optional class attribute): for a corpus task, the shares of its sources
  that the train, validation and test splits take when the sizes are not given, e.g.
  ``(0.8, 0.1, 0.1)``; None (the default): 3000 / 500 / 1000 examples, as for a generated task.
- **data_summary() -> str | None** (optional): one line saying what reading the data did (rows
  read and kept, why rows were left out); a run prints and records it once.
- **check_source(text) -> str | None** (optional): the reason ``text`` is not a valid source of
  the task, or None. The default refuses empty text, text with more than ``max_source_length``
  tokens and tokens outside ``source_alphabet``; the date tasks also refuse dates that do not
  exist and dates outside their years (min_year..max_year: the model never saw them).
  ``attnlab predict`` and the served model refuse such inputs (exit 2 / HTTP 400) before decoding;
  every source ``sample`` draws must pass it (the checks below try it).
- **Checks**: every model built probes its task (20 examples); ``attnlab plugins --check`` and
  ``attnlab.plugins.testing.check_task(MyTask)`` run the same checks.
"""

from __future__ import annotations

import random
from collections.abc import Collection
from typing import Any, NamedTuple

from attnlab.plugins.options import Configurable, reject_unknown
from attnlab.plugins.tokens import alphabet_tokens, split_tokens, unit_name

#: For each target token, the source token positions it comes from (empty: from none).
Alignment = tuple[tuple[int, ...], ...]


class Example(NamedTuple):
    """source and target strings; alignment has one entry per target token, or is None."""

    source: str
    target: str
    alignment: Alignment | None


class Task(Configurable):
    """Base class of every task plugin.

    Subclasses set the class attributes ``source_alphabet`` and ``target_alphabet`` (every
    token the task can produce on each side), ``source_tokenization`` and
    ``target_tokenization`` when a side is not cut into characters, and implement :meth:`sample`.

    Args:
        **options: task-specific options; unknown ones are an error.
    """

    source_alphabet: str | Collection[str] = ""
    target_alphabet: str | Collection[str] = ""
    source_tokenization: str = "characters"
    target_tokenization: str = "characters"
    #: A corpus task's split shares (train, validation, test) when no sizes are given, or None.
    default_split: tuple[float, float, float] | None = None

    def __init__(self, **options: Any) -> None:
        reject_unknown(type(self), options, self._fixed)

    def source_tokens(self, text: str) -> list[str]:
        """The tokens of a source text (see :func:`attnlab.plugins.split_tokens`)."""
        return split_tokens(text, self.source_tokenization)

    def target_tokens(self, text: str) -> list[str]:
        """The tokens of a target text."""
        return split_tokens(text, self.target_tokenization)

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
        """The most tokens a source of this task has."""
        raise NotImplementedError

    def corpus(self) -> list[Example] | None:
        """Every example of a task with fixed data, or None for a generated task (the default).

        A corpus task splits by a hash of each example's :meth:`key`: all examples of one key
        (one source and its alternative targets) land in one split, and the test split does not
        depend on the seed."""
        return None

    def held_out(self) -> dict[str, list[Example]]:
        """A corpus task's own validation and/or test examples (``"validation"``, ``"test"``: e.g.
        files the user gave for them), or {} (the default) to cut every split from
        :meth:`corpus`. A held-out split takes its first sources in the order given; the sources
        it holds are left out of the others."""
        return {}

    def data_version(self) -> str | None:
        """A digest of the data a corpus task read (a file's sha256), or None (the default): the
        data cache and scheduled retraining tell an unchanged file from a changed one by it."""
        return None

    def data_summary(self) -> str | None:
        """One line saying what reading the data did (rows read, kept, left out and why), or None
        (the default: nothing to say, as for a generated task)."""
        return None

    def generate(self, n: int, seed: int) -> list[Example]:
        """``n`` examples, the same ones for the same seed."""
        rng = random.Random(seed)
        return [self.sample(rng) for _ in range(n)]

    def check_source(self, text: str) -> str | None:
        """Why ``text`` cannot be a source of this task, or None when it can.

        The optional validation hook: ``attnlab predict`` and the served model refuse an input
        with this reason before decoding it. The reason is phrased to follow the input, as in
        ``'31-02-2023' is not a real date: February 2023 has 28 days``. The default refuses an
        empty text, one with more than :attr:`max_source_length` tokens and tokens outside
        :attr:`source_alphabet`; a task that knows more (real calendar dates, a grammar)
        overrides it and calls ``super().check_source(text)`` first.
        """
        tokens = self.source_tokens(text)
        unit = unit_name(self.source_tokenization)
        if not tokens:
            return f"is no source: the source is empty; give at least one {unit[:-1]}"
        longest = self.max_source_length
        if len(tokens) > longest:
            return f"has {len(tokens)} {unit}; this task's sources have at most {longest}"
        known = set(alphabet_tokens(self.source_alphabet, self.source_tokenization))
        foreign = sorted({token for token in tokens if token not in known})
        if not foreign:
            return None
        if self.source_tokenization == "characters":
            alphabet = self.source_alphabet if isinstance(self.source_alphabet, str) else "".join(sorted(known))
            return f"has character(s) {''.join(foreign)!r} outside this task's alphabet {alphabet!r}"
        listed = " ".join(sorted(known)) if len(known) <= 60 else " ".join(sorted(known)[:60]) + " ..."
        return f"has token(s) {' '.join(foreign)!r} outside this task's tokens: {listed}"

    def validate_source(self, text: str) -> None:
        """Raise ValueError naming ``text`` and the reason :meth:`check_source` gives, if any."""
        reason = self.check_source(text)
        if reason is not None:
            raise ValueError(f"{shown(text)} {reason}")


def shown(text: str, width: int = 40) -> str:
    """``text`` quoted for a one-line message, cut to ``width`` characters."""
    return repr(text) if len(text) <= width else repr(text[:width]) + "..."
