"""Data splits by value and their encoding into padded tensors.

Splits are made by the task's key (for dates: the date itself), so no value is shared between
train, validation and test, even when the same date appears in several source formats.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from torch import Tensor

from attnlab.plugins import Example, Task
from attnlab.vocab import Vocab, pad_batch

SPLIT_NAMES = ("train", "validation", "test")


@dataclass(frozen=True)
class Splits:
    """Examples of each split; no key occurs in two splits."""

    train: list[Example]
    validation: list[Example]
    test: list[Example]

    def items(self) -> list[tuple[str, list[Example]]]:
        return [(name, getattr(self, name)) for name in SPLIT_NAMES]


def make_splits(task: Task, sizes: tuple[int, int, int], seed: int) -> Splits:
    """Draw ``sum(sizes)`` examples with distinct keys from ``task`` and cut them into splits.

    Deterministic for a seed. Raises ValueError when the task has fewer distinct values than
    asked for.
    """
    total = sum(sizes)
    space = task.space_size
    if space is not None and total > space:
        raise ValueError(
            f"asked for {total} examples ({'+'.join(map(str, sizes))}) but task "
            f"{type(task).__name__} has only {space} distinct values; ask for at most {space}"
        )
    rng = random.Random(seed)
    by_key: dict[str, Example] = {}
    attempts = 0
    # Rejection sampling; allowing 50x the draws keeps near-full spaces finishable yet bounded.
    while len(by_key) < total:
        attempts += 1
        if attempts > 50 * total + 1000:
            raise ValueError(
                f"could only draw {len(by_key)} distinct examples of {total} from the task; "
                "ask for fewer or widen the task's options"
            )
        example = task.sample(rng)
        by_key.setdefault(task.key(example), example)
    examples = list(by_key.values())
    n_train, n_val, _ = sizes
    return Splits(
        examples[:n_train], examples[n_train : n_train + n_val], examples[n_train + n_val :]
    )


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

    def rows(self, index: slice | Tensor) -> "EncodedExamples":
        """The rows selected by ``index`` (a slice or a long index tensor)."""
        return EncodedExamples(self.src[index], self.src_mask[index], self.tgt[index], self.source_lengths[index])

    def to(self, device) -> "EncodedExamples":
        return EncodedExamples(*(t.to(device) for t in (self.src, self.src_mask, self.tgt, self.source_lengths)))


def encode_examples(examples: list[Example], src_vocab: Vocab, tgt_vocab: Vocab) -> EncodedExamples:
    """Encode and pad ``examples`` (sources plain, targets framed by SOS/EOS)."""
    src, src_mask = pad_batch([src_vocab.encode(ex.source) for ex in examples])
    tgt, _ = pad_batch([tgt_vocab.encode(ex.target, sos=True, eos=True) for ex in examples])
    return EncodedExamples(src, src_mask, tgt, src_mask.sum(dim=1))
