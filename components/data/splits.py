"""Data splits by value and their encoding into padded tensors.

Splits are made by the task's key (for dates: the date itself), so no value is shared between
train, validation and test, even when the same date appears in several source formats.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.data.vocab import PAD, Vocab, pad_batch
from attnlab.lab.errors import UserError
from attnlab.plugins import Example, Task

SPLIT_NAMES = ("train", "validation", "test")
#: The split sizes when none are given, for a task without default shares (a generated task).
DEFAULT_SIZES = (3000, 500, 1000)
#: The flags that set the split sizes, as a message names them.
SIZE_FLAGS = "--train-size N, -o validation_size=N, -o test_size=N"
#: A split's size as a config holds it: a number of examples (sources, for a corpus), or None
#: for the task's default.
Sizes = tuple[int | None, int | None, int | None]


class SplitsUnavailable(UserError, ValueError):
    """The data cannot give the splits asked for: fewer distinct values or sources than the
    splits (and a registered model's benchmark) ask for, or a test split smaller than the
    benchmark it must hold. A mistake in the sizes or the task's options, told in one line (a
    ValueError too, as before)."""


@dataclass(frozen=True)
class Splits:
    """Examples of each split; no key occurs in two splits."""

    train: list[Example]
    validation: list[Example]
    test: list[Example]

    def items(self) -> list[tuple[str, list[Example]]]:
        return [(name, getattr(self, name)) for name in SPLIT_NAMES]


def draw_distinct(task: Task, n: int, rng: random.Random, exclude: AbstractSet[str] = frozenset()) -> list[Example]:
    """``n`` examples of ``task`` with distinct keys, none of them in ``exclude``.

    Raises SplitsUnavailable when the task cannot produce that many (its space is too small).
    """
    space = task.space_size
    if space is not None and n + len(exclude) > space:
        raise SplitsUnavailable(
            f"asked for {n + len(exclude)} distinct examples but task {type(task).__name__} has "
            f"only {space} distinct values; ask for at most {space} in all"
        )
    by_key: dict[str, Example] = {}
    # Rejection sampling; allowing 50x the draws keeps near-full spaces finishable yet bounded.
    for _ in range(50 * n + 1000):
        if len(by_key) == n:
            return list(by_key.values())
        example = task.sample(rng)
        key = task.key(example)
        if key not in exclude:
            by_key.setdefault(key, example)
    if len(by_key) == n:
        return list(by_key.values())
    raise SplitsUnavailable(
        f"could only draw {len(by_key)} distinct examples of {n} from {type(task).__name__}; ask for fewer or widen the task's options"
    )


def split_sizes(task: Task, given: Sizes) -> tuple[int, int, int]:
    """The (train, validation, test) sizes of ``given``, each None filled in. Without default
    shares (:attr:`~attnlab.plugins.Task.default_split`), from :data:`DEFAULT_SIZES`. With them,
    a split of its own data (:meth:`~attnlab.plugins.Task.held_out`) takes all its sources, the
    validation and test splits their share of the corpus's other sources (at least 1), and the
    training split the sources left. SplitsUnavailable, naming the flags, when that leaves none."""
    train, validation, test = given
    if train is not None and validation is not None and test is not None:
        return train, validation, test
    shares, corpus = task.default_split, task.corpus()
    if shares is None or corpus is None:
        fill = [DEFAULT_SIZES[i] if size is None else size for i, size in enumerate(given)]
        return fill[0], fill[1], fill[2]
    held = {name: {task.key(ex) for ex in examples} for name, examples in task.held_out().items()}
    taken = set().union(*held.values())
    available = len({key for key in map(task.key, corpus) if key not in taken})

    def share(size: int | None, name: str, fraction: float) -> int:
        if size is not None:
            return size
        return len(held[name]) if name in held else max(1, int(fraction * available))

    validation, test = share(validation, "validation", shares[1]), share(test, "test", shares[2])
    if train is None:
        train = available - validation * ("validation" not in held) - test * ("test" not in held)
        if train < 1:
            raise SplitsUnavailable(
                f"task {type(task).__name__} has {available} distinct source(s) to split: too few for a training split; "
                f"give more data, or set the sizes ({SIZE_FLAGS})"
            )
    return train, validation, test


def check_sizes(task: Task, sizes: tuple[int, int, int], test_task: Task | None = None) -> None:
    """Raise SplitsUnavailable when the task(s) have fewer distinct values than the splits ask for.

    Cheap (no example is drawn), so callers can check a config before any work starts.
    """
    n_train, n_val, n_test = sizes
    needs = [("train + validation + test", task, n_train + n_val + n_test)]
    if test_task is not None:
        needs = [("train + validation", task, n_train + n_val), ("test", test_task, n_test)]
    for what, plugin, count in needs:
        space = plugin.space_size
        if space is not None and count > space:
            raise SplitsUnavailable(
                f"{what} = {count} examples, but task {type(plugin).__name__} has only {space} "
                f"distinct values with these options; ask for at most {space} ({SIZE_FLAGS})"
            )


def check_benchmark_room(task: Task, sizes: tuple[int, int, int], benchmark: int, test_task: Task | None = None) -> None:
    """Raise SplitsUnavailable when a generated task cannot give a registered model's benchmark
    of ``benchmark`` distinct examples beside the splits ``sizes`` (train, validation, test):
    its test distribution (``test_task``, else ``task``) has fewer distinct values than the
    benchmark, or, with one distribution, fewer than the benchmark and the training and
    validation splits, which leave the benchmark's sources out. A corpus keeps its benchmark in
    its test split (:func:`corpus_splits` says when that is too small); it is not checked here.
    """
    if task.corpus() is not None:
        return
    drawn = test_task or task
    space = drawn.space_size
    if space is not None and benchmark > space:
        raise SplitsUnavailable(
            f"the registered model's benchmark takes {benchmark} distinct examples, but task {type(drawn).__name__} has only "
            f"{space} distinct values with these options; widen the task's options, or ask for a benchmark of at most "
            f"{space} (attnlab schedule --benchmark-size)"
        )
    n_train, n_val, _ = sizes
    if test_task is None and space is not None and n_train + n_val + benchmark > space:
        raise SplitsUnavailable(
            f"train + validation + benchmark = {n_train} + {n_val} + {benchmark} examples, but task {type(task).__name__} has only "
            f"{space} distinct values with these options, and the registered model's benchmark stays out of training and "
            f"validation; ask for at most {space - benchmark} in train + validation ({SIZE_FLAGS}), or widen the task's options"
        )


def make_splits(
    task: Task, sizes: tuple[int, int, int], seed: int, test_task: Task | None = None, benchmark: AbstractSet[str] = frozenset()
) -> Splits:
    """Train, validation and test splits of the given sizes, no key shared between them, and no
    key of ``benchmark`` (a registered model's benchmark set, which challengers are compared on)
    in training or validation: a corpus keeps them in its test split (:func:`corpus_splits`), a
    generated task draws its training and validation examples without them.

    ``test_task`` (default: ``task``) draws the test split, e.g. the same task with longer
    sources than training ever saw. Deterministic for a seed.
    """
    check_sizes(task, sizes, test_task)
    corpus = task.corpus()
    if corpus is not None:
        return corpus_splits(task, corpus, sizes, benchmark)
    n_train, n_val, n_test = sizes
    rng = random.Random(seed)
    seen = draw_distinct(task, n_train + n_val, rng, exclude=benchmark)
    test = draw_distinct(test_task or task, n_test, rng, exclude={task.key(ex) for ex in seen})
    return Splits(seen[:n_train], seen[n_train:], test)


def key_order(key: str) -> bytes:
    """Where a key falls in a corpus's split order: the sha256 of its UTF-8 bytes (stable across
    machines and Python versions, unlike ``hash``; the raw digest sorts as its hex form does, at
    half the memory for a million keys)."""
    return hashlib.sha256(key.encode("utf-8")).digest()


def corpus_splits(task: Task, corpus: list[Example], sizes: tuple[int, int, int], benchmark: AbstractSet[str] = frozenset()) -> Splits:
    """Splits of a fixed corpus by the hash order of the keys (:func:`key_order`): the first
    ``test`` keys are the test split, the next ``validation`` keys the validation split, the next
    ``train`` keys the training split; every example of a key goes with it, in corpus order. A
    split the task holds out (:meth:`~attnlab.plugins.Task.held_out`) is instead the first keys
    of its own examples, in their order, and all its keys are left out of the corpus. The keys
    of ``benchmark`` that the corpus holds come first in the test split cut from it, so that
    they never train even when new keys shift the hash order (a file that grew).

    The test split does not depend on the seed; a key never lands in two splits. Raises
    SplitsUnavailable when the corpus (or a held-out split) has fewer keys than the sizes ask for, or
    the test split is too small to hold the benchmark's keys.
    """
    n_train, n_val, n_test = sizes
    wanted = {"test": n_test, "validation": n_val, "train": n_train}
    picked: dict[str, list[Example]] = {}
    held_out = task.held_out()
    for name, examples in held_out.items():
        if name not in ("validation", "test"):
            raise ValueError(f"task {type(task).__name__} holds out a split named {name!r}; only 'validation' and 'test' can be")
        picked[name] = _first_keys(task, examples, wanted[name], f"the {name} data of task {type(task).__name__}")
    taken = {task.key(ex) for examples in held_out.values() for ex in examples}  # all of them, used or not
    by_key: dict[str, list[Example]] = {}
    for example in corpus:
        if task.key(example) not in taken:
            by_key.setdefault(task.key(example), []).append(example)
    cut = [name for name in ("test", "validation", "train") if name not in picked]
    needed = sum(wanted[name] for name in cut)
    if needed > len(by_key):
        names = " + ".join(cut)
        raise SplitsUnavailable(
            f"{names} = {needed} sources, but task {type(task).__name__} has only {len(by_key)} distinct sources"
            f"{' besides its held-out splits' if taken else ''}; ask for at most {len(by_key)} ({SIZE_FLAGS})"
        )
    ordered, start = _pinned_first(sorted(by_key, key=key_order), benchmark if "test" in cut else frozenset(), n_test), 0
    for name in cut:
        keys = set(ordered[start : start + wanted[name]])
        picked[name] = [ex for key in by_key if key in keys for ex in by_key[key]]
        start += wanted[name]
    return Splits(picked["train"], picked["validation"], picked["test"])


def _pinned_first(ordered: list[str], pinned: AbstractSet[str], n_test: int) -> list[str]:
    """``ordered`` with the keys of ``pinned`` first (in their order there); SplitsUnavailable
    when they outnumber the test split that must hold them."""
    first = [key for key in ordered if key in pinned]
    if not first:
        return ordered
    if len(first) > n_test:
        raise SplitsUnavailable(
            f"test = {n_test} sources, but the registered model's benchmark has {len(first)} sources of this data, which must "
            f"stay in the test split (they are what challengers are compared on); ask for -o test_size={len(first)} or more, "
            "or register the run under another name (--model-name)"
        )
    return first + [key for key in ordered if key not in pinned]


def _first_keys(task: Task, examples: list[Example], count: int, what: str) -> list[Example]:
    """Every example of the first ``count`` keys of ``examples``, in their order;
    SplitsUnavailable when there are fewer keys."""
    keys = list(dict.fromkeys(task.key(ex) for ex in examples))
    if count > len(keys):
        raise SplitsUnavailable(
            f"{what} has only {len(keys)} distinct sources, fewer than the {count} asked for; ask for at most {len(keys)}"
        )
    chosen = set(keys[:count])
    return [ex for ex in examples if task.key(ex) in chosen]


@dataclass(frozen=True)
class EncodedExamples:
    """A split as tensors.

    src: long [N, Ls]; src_mask: bool [N, Ls]; tgt: long [N, Lt + 2] (SOS, target, EOS, PAD...);
    source_lengths: long [N].
    """

    src: Tensor
    src_mask: Tensor
    tgt: Tensor
    source_lengths: Tensor

    def __len__(self) -> int:
        return self.src.shape[0]

    def rows(self, index: slice | Tensor) -> EncodedExamples:
        """The rows selected by ``index`` (a slice or a long index tensor)."""
        return EncodedExamples(self.src[index], self.src_mask[index], self.tgt[index], self.source_lengths[index])

    def trimmed(self) -> EncodedExamples:
        """The same rows without the padding columns that no row needs."""
        src_len = int(self.source_lengths.max())
        tgt_len = int((self.tgt != PAD).sum(dim=1).max())
        return EncodedExamples(self.src[:, :src_len], self.src_mask[:, :src_len], self.tgt[:, :tgt_len], self.source_lengths)

    def to(self, device: torch.device | str) -> EncodedExamples:
        return EncodedExamples(*(t.to(device) for t in (self.src, self.src_mask, self.tgt, self.source_lengths)))


def encode_examples(examples: list[Example], src_vocab: Vocab, tgt_vocab: Vocab) -> EncodedExamples:
    """Encode and pad ``examples`` (sources plain, targets framed by SOS/EOS)."""
    src, src_mask = pad_batch([src_vocab.encode(ex.source) for ex in examples])
    tgt, _ = pad_batch([tgt_vocab.encode(ex.target, sos=True, eos=True) for ex in examples])
    return EncodedExamples(src, src_mask, tgt, src_mask.sum(dim=1))
