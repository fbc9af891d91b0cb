"""The reverse task: a string -> the same string reversed."""

from __future__ import annotations

import random
from string import digits
from typing import Any

from attnlab.plugins.options import require_positive_int
from attnlab.plugins.task import Example, Task

#: The longest string ``reverse`` draws: the built-in transformer encoder's and decoder's default
#: max_length. The rnn decoder runs one Python step per character, so longer strings would train
#: for hours per epoch; ``-o task.max_length=1000000000`` grew to 5 GB before it was stopped.
MAX_REVERSE_LENGTH = 512


class ReverseTask(Task):
    """A random string over ``alphabet`` (length uniform in min_length..max_length) -> reversed.

    Target position i aligns with source position L-1-i. max_length is at most
    MAX_REVERSE_LENGTH (512).
    """

    source_alphabet = target_alphabet = digits

    def __init__(self, min_length: int = 5, max_length: int = 20, alphabet: str = digits, **options: Any) -> None:
        super().__init__(**options)
        require_positive_int(min_length=min_length, max_length=max_length)
        if min_length > max_length:
            raise ValueError(f"min_length ({min_length}) must be <= max_length ({max_length})")
        if max_length > MAX_REVERSE_LENGTH:
            raise ValueError(f"max_length must be at most {MAX_REVERSE_LENGTH}, got {max_length}")
        if not isinstance(alphabet, str) or not alphabet or len(set(alphabet)) != len(alphabet):
            raise ValueError(f"alphabet must be a non-empty string without repeated characters, got {alphabet!r}")
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
