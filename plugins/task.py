"""The task contract: deterministic (source, target, alignment) examples from a seed."""

from __future__ import annotations

import random
from typing import NamedTuple

from attnlab.plugins.options import option_names, reject_unknown

#: For each target character, the source positions it comes from (empty: from none).
Alignment = tuple[tuple[int, ...], ...]


class Example(NamedTuple):
    """source and target strings; alignment has one entry per target character, or is None."""

    source: str
    target: str
    alignment: Alignment | None


class Task:
    """Base class of every task plugin.

    Subclasses set the class attributes ``source_alphabet`` and ``target_alphabet`` (every
    character the task can produce on each side) and implement :meth:`sample`.

    Args:
        **options: task-specific options; unknown ones are an error.
    """

    source_alphabet: str = ""
    target_alphabet: str = ""

    def __init__(self, **options) -> None:
        reject_unknown(type(self), options, ())

    @classmethod
    def option_names(cls) -> list[str]:
        """Names of the options this task accepts."""
        return option_names(cls, ())

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

    def validate_source(self, text: str) -> None:
        """Raise ValueError when ``text`` cannot be a source of this task (empty, foreign chars)."""
        if not text:
            raise ValueError("the source is empty; give at least one character")
        foreign = sorted({ch for ch in text if ch not in self.source_alphabet})
        if foreign:
            raise ValueError(
                f"{text!r} has character(s) {''.join(foreign)!r} outside this task's alphabet "
                f"{self.source_alphabet!r}"
            )
