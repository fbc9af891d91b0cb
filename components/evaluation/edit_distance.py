"""Edit-distance metrics of outputs against their references, the field's standard measures.

- :func:`token_error_rate`: Levenshtein distances (insertions, deletions, substitutions) summed
  over the examples, divided by the summed reference lengths: CER on characters, PER on phonemes;
- :func:`sequence_error_rate`: the share of outputs that match none of their references (WER in
  G2P papers).

An output and each reference are token sequences: a ``str`` (one token per character) or a
sequence of string tokens (e.g. phonemes). A source may have several correct references (a word
with two pronunciations); an output is scored against the reference closest to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rapidfuzz.distance import Levenshtein

#: A token sequence: a string (characters are the tokens) or a sequence of string tokens.
Tokens = str | Sequence[str]


def _checked(outputs: Sequence[Tokens], references: Sequence[Sequence[Tokens]]) -> None:
    """ValueError unless there is one non-empty list of references per output."""
    if len(outputs) != len(references):
        raise ValueError(f"{len(outputs)} outputs but {len(references)} reference lists: one list per output")
    if any(len(refs) == 0 for refs in references):
        raise ValueError("every output needs at least one reference")


def closest_index(output: Tokens, references: Sequence[Tokens]) -> int:
    """The index of the reference closest to ``output`` by Levenshtein distance.

    Ties go to the shorter reference (the larger error rate: the score is not flattered by a long
    reference), then to the one listed first."""
    if not references:
        raise ValueError("every output needs at least one reference")
    return min(range(len(references)), key=lambda i: (Levenshtein.distance(output, references[i]), len(references[i]), i))


def closest_reference(output: Tokens, references: Sequence[Tokens]) -> tuple[int, Tokens]:
    """The Levenshtein distance from ``output`` to its closest reference (see
    :func:`closest_index`), and that reference."""
    reference = references[closest_index(output, references)]
    return Levenshtein.distance(output, reference), reference


def token_error_rate(outputs: Sequence[Tokens], references: Sequence[Sequence[Tokens]]) -> float:
    """Summed edit distances over summed reference lengths, each output scored against its
    closest reference (:func:`closest_reference`); ``references[i]`` holds the correct
    references of ``outputs[i]``.

    The ratio of sums, not the mean of per-example ratios: a long reference weighs more than a
    short one. NaN when the chosen references hold no token at all (no examples); it can exceed 1
    (an output longer than its reference)."""
    _checked(outputs, references)
    errors = reference_tokens = 0
    for output, refs in zip(outputs, references):
        distance, reference = closest_reference(output, refs)
        errors += distance
        reference_tokens += len(reference)
    return errors / reference_tokens if reference_tokens else math.nan


def sequence_error_rate(outputs: Sequence[Tokens], references: Sequence[Sequence[Tokens]]) -> float:
    """The share of outputs equal to none of their references (token by token, so the string
    ``"ab"`` equals the tokens ``["a", "b"]``); NaN without examples."""
    _checked(outputs, references)
    if not outputs:
        return math.nan
    wrong = sum(tuple(output) not in {tuple(ref) for ref in refs} for output, refs in zip(outputs, references))
    return wrong / len(outputs)
