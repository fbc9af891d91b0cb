"""Conformance probe of task plugins: alphabets, lengths, determinism and alignments of a few
drawn examples (see :mod:`attnlab.plugins._probe`)."""

from __future__ import annotations

from attnlab.plugins._probe_base import Subject, positive_int
from attnlab.plugins.task import Example, Task


def probe_task(task: Task, subject: Subject | None = None, examples: int = 20, seed: int = 0) -> list[Example]:
    """Check a task: alphabets, ``max_source_length`` (a property), and ``examples`` examples
    drawn twice with the same seed: the same both times, characters within the alphabets,
    sources no longer than max_source_length and accepted by ``check_source``, alignments one
    entry per target character with source indices in range. Returns the examples."""
    subject = subject or Subject("tasks", type(task))
    for name in ("source_alphabet", "target_alphabet"):
        value = getattr(task, name, None)
        if not isinstance(value, str) or not value:
            raise subject.fail(f"attribute {name}", "a non-empty str", repr(value))
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


def _example(subject: Subject, task: Task, example: object, longest: int, where: str) -> None:
    if not isinstance(example, Example):
        raise subject.fail(where, "Example(source, target, alignment)", repr(example)[:80])
    source, target, alignment = example
    if not isinstance(source, str) or not source:
        raise subject.fail(f"{where}: source", "a non-empty str", repr(source))
    if not isinstance(target, str):
        raise subject.fail(f"{where}: target", "a str", repr(target))
    for side, text, alphabet in (("source", source, task.source_alphabet), ("target", target, task.target_alphabet)):
        foreign = sorted({ch for ch in text if ch not in alphabet})
        if foreign:
            raise subject.fail(f"{where}: {side} {text!r}", f"characters of {side}_alphabet {alphabet!r}", f"{''.join(foreign)!r}")
    if len(source) > longest:
        raise subject.fail(f"{where}: source {source!r}", f"at most max_source_length = {longest} characters", len(source))
    refused = subject.call(f"check_source({source!r})", task.check_source, source)
    if refused is not None:
        raise subject.fail(f"{where}: check_source({source!r})", "None: a source the task draws is valid", repr(refused))
    if alignment is None:
        return
    if not isinstance(alignment, (tuple, list)) or len(alignment) != len(target):
        got = f"{len(alignment)} entries" if isinstance(alignment, (tuple, list)) else type(alignment).__name__
        raise subject.fail(
            f"{where}: alignment of target {target!r}",
            f"one entry per target character ({len(target)}; none for EOS)",
            got,
        )
    for t, entry in enumerate(alignment):
        if not isinstance(entry, (tuple, list)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in entry):
            raise subject.fail(f"{where}: alignment entry {t}", "a tuple of source indices (ints)", repr(entry))
        outside = [i for i in entry if not 0 <= i < len(source)]
        if outside:
            raise subject.fail(
                f"{where}: alignment entry {t} (target {target[t]!r}) for source {source!r}",
                f"indices in 0..{len(source) - 1}",
                outside,
            )
