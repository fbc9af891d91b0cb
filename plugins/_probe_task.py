"""Conformance probe of task plugins: alphabets, lengths, determinism and alignments of a few
drawn examples (see :mod:`attnlab.plugins._probe_base`)."""

from __future__ import annotations

from attnlab.plugins._probe_base import Subject, positive_int
from attnlab.plugins.task import Example, Task
from attnlab.plugins.tokens import TOKENIZATIONS, alphabet_tokens, join_tokens


def probe_task(task: Task, subject: Subject | None = None, examples: int = 20, seed: int = 0) -> list[Example]:
    """Check a task: tokenizations, alphabets, ``max_source_length`` (a property), and
    ``examples`` examples drawn twice with the same seed: the same both times, tokens within the
    alphabets, sources no longer than max_source_length and accepted by ``check_source``,
    alignments one entry per target token with source indices in range. Returns the examples."""
    subject = subject or Subject("tasks", type(task))
    for side in ("source", "target"):
        _alphabet(subject, task, side)
    longest = subject.call("max_source_length", getattr, task, "max_source_length")
    if callable(longest):
        raise subject.fail("max_source_length", "a property (add @property)", "a method")
    positive_int(subject, "max_source_length", longest)
    space = subject.call("space_size", getattr, task, "space_size")
    if space is not None:
        positive_int(subject, "space_size", space)
    drawn = subject.call(f"generate({examples}, seed={seed})", task.generate, examples, seed)
    again = subject.call(f"generate({examples}, seed={seed})", task.generate, examples, seed)
    if not isinstance(drawn, list) or len(drawn) != examples:
        raise subject.fail(f"generate({examples}, seed={seed})", f"a list of {examples} examples", repr(drawn)[:80])
    for i, example in enumerate(drawn):
        _example(subject, task, example, longest, f"example {i} of generate({examples}, seed={seed})")
    if list(drawn) != list(again):
        first = next(i for i, (a, b) in enumerate(zip(drawn, again)) if a != b)
        raise subject.fail(
            f"generate({examples}, seed={seed}) twice (draw only from the rng given to sample())",
            "the same examples",
            f"{drawn[first]!r} then {again[first]!r}",
        )
    return drawn


def _alphabet(subject: Subject, task: Task, side: str) -> None:
    """``{side}_tokenization`` is a known one and ``{side}_alphabet`` declares tokens of it."""
    tokenization = getattr(task, f"{side}_tokenization", None)
    if tokenization not in TOKENIZATIONS:
        raise subject.fail(f"attribute {side}_tokenization", f"one of {', '.join(map(repr, TOKENIZATIONS))}", repr(tokenization))
    value = getattr(task, f"{side}_alphabet", None)
    if tokenization == "characters":
        if not isinstance(value, str) or not value:
            raise subject.fail(f"attribute {side}_alphabet", "a non-empty str of characters", repr(value))
        return
    tokens = value.split() if isinstance(value, str) else value
    try:
        listed = list(tokens) if tokens is not None else []
    except TypeError:
        listed = []
    if not listed or not all(isinstance(token, str) and token and not any(ch.isspace() for ch in token) for token in listed):
        raise subject.fail(
            f"attribute {side}_alphabet", "whitespace-separated tokens in a str, or a collection of token strings", repr(value)[:80]
        )


def _example(subject: Subject, task: Task, example: object, longest: int, where: str) -> None:
    if not isinstance(example, Example):
        raise subject.fail(where, "Example(source, target, alignment)", repr(example)[:80])
    source, target, alignment = example
    if not isinstance(source, str) or not task.source_tokens(source):
        raise subject.fail(f"{where}: source", "a str of at least one token", repr(source))
    if not isinstance(target, str):
        raise subject.fail(f"{where}: target", "a str", repr(target))
    for side, text in (("source", source), ("target", target)):
        _tokens(subject, task, side, text, where)
    source_length = len(task.source_tokens(source))
    if source_length > longest:
        raise subject.fail(f"{where}: source {source!r}", f"at most max_source_length = {longest} tokens", source_length)
    refused = subject.call(f"check_source({source!r})", task.check_source, source)
    if refused is not None:
        raise subject.fail(f"{where}: check_source({source!r})", "None: a source the task draws is valid", repr(refused))
    if alignment is not None:
        _alignment(subject, alignment, (source, task.source_tokens(source)), (target, task.target_tokens(target)), where)


def _tokens(subject: Subject, task: Task, side: str, text: str, where: str) -> None:
    """``text``'s tokens are in the side's alphabet, and a whitespace side's text is its tokens
    joined by one space (what decoding gives back, so exact match can hold)."""
    tokenization = getattr(task, f"{side}_tokenization")
    tokens = task.source_tokens(text) if side == "source" else task.target_tokens(text)
    if tokenization != "characters" and text != join_tokens(tokens, tokenization):
        raise subject.fail(f"{where}: {side} {text!r}", "tokens joined by one space", repr(text))
    alphabet = getattr(task, f"{side}_alphabet")
    known = set(alphabet_tokens(alphabet, tokenization))
    foreign = sorted({token for token in tokens if token not in known})
    if foreign:
        joined = "".join(foreign) if tokenization == "characters" else " ".join(foreign)
        shown = alphabet if isinstance(alphabet, str) else " ".join(sorted(known))
        raise subject.fail(f"{where}: {side} {text!r}", f"tokens of {side}_alphabet {shown!r}"[:200], f"{joined!r}")


Side = tuple[str, list[str]]


def _alignment(subject: Subject, alignment: object, source_side: Side, target_side: Side, where: str) -> None:
    """One entry per target token, each a tuple of indices into the source's tokens; each side
    is given as (text, tokens)."""
    (source_text, source), (target_text, target) = source_side, target_side
    if not isinstance(alignment, (tuple, list)) or len(alignment) != len(target):
        got = f"{len(alignment)} entries" if isinstance(alignment, (tuple, list)) else type(alignment).__name__
        raise subject.fail(
            f"{where}: alignment of target {target_text!r}",
            f"one entry per target token ({len(target)}; none for EOS)",
            got,
        )
    for t, entry in enumerate(alignment):
        if not isinstance(entry, (tuple, list)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in entry):
            raise subject.fail(f"{where}: alignment entry {t}", "a tuple of source indices (ints)", repr(entry))
        outside = [i for i in entry if not 0 <= i < len(source)]
        if outside:
            raise subject.fail(
                f"{where}: alignment entry {t} (target {target[t]!r}) for source {source_text!r}",
                f"indices in 0..{len(source) - 1}",
                outside,
            )
