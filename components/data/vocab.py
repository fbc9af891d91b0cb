"""Token vocabularies (characters, or whitespace-separated tokens such as phonemes) with
PAD/SOS/EOS/UNK, and padding of id sequences into batches."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.plugins.tokens import EOS_ID, PAD_ID, SOS_ID, UNK_ID, alphabet_tokens, join_tokens, split_tokens

# The ids are part of the plugin contract (attnlab.plugins.PAD_ID, ...); these are their names here.
PAD, SOS, EOS, UNK = PAD_ID, SOS_ID, EOS_ID, UNK_ID
SPECIALS = ("<pad>", "<sos>", "<eos>", "<unk>")


@dataclass(frozen=True)
class Vocab:
    """Token <-> id mapping. Ids 0-3 are PAD, SOS, EOS, UNK; the tokens follow in order.

    ``tokenization`` says how a text is cut into tokens: ``"characters"`` or ``"whitespace"``
    (see :func:`attnlab.plugins.split_tokens`)."""

    tokens: tuple[str, ...]
    tokenization: str = "characters"

    @classmethod
    def from_alphabet(cls, alphabet: Iterable[str], tokenization: str = "characters") -> Vocab:
        """A vocabulary of the distinct tokens ``alphabet`` declares, sorted (a string is cut
        by ``tokenization``)."""
        return cls(alphabet_tokens(alphabet, tokenization), tokenization)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ids", {token: i + len(SPECIALS) for i, token in enumerate(self.tokens)})

    def __len__(self) -> int:
        return len(SPECIALS) + len(self.tokens)

    def token(self, idx: int) -> str:
        """The token of id ``idx`` (specials as ``<pad>`` etc.)."""
        return SPECIALS[idx] if idx < len(SPECIALS) else self.tokens[idx - len(SPECIALS)]

    def split(self, text: str) -> list[str]:
        """The tokens of ``text``."""
        return split_tokens(text, self.tokenization)

    def join(self, tokens: Iterable[str]) -> str:
        """The text of ``tokens``."""
        return join_tokens(tokens, self.tokenization)

    def encode(self, text: str, sos: bool = False, eos: bool = False) -> list[int]:
        """Ids of ``text``'s tokens (UNK for unknown ones), optionally framed by SOS/EOS."""
        ids = [self._ids.get(token, UNK) for token in self.split(text)]  # type: ignore[attr-defined]
        return ([SOS] if sos else []) + ids + ([EOS] if eos else [])

    def decode(self, ids: Iterable[int]) -> str:
        """The text up to the first EOS, skipping PAD and SOS."""
        out = []
        for idx in ids:
            if idx == EOS:
                break
            if idx not in (PAD, SOS):
                out.append(self.token(idx))
        return self.join(out)


def pad_batch(sequences: Sequence[Sequence[int]], length: int | None = None) -> tuple[Tensor, Tensor]:
    """Right-pad id sequences with PAD.

    Returns ids long [B, L] and mask bool [B, L] (True on real tokens); L = ``length`` or the
    longest sequence.
    """
    width = max((len(s) for s in sequences), default=0) if length is None else length
    ids = torch.full((len(sequences), width), PAD, dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.as_tensor(seq, dtype=torch.long)
    return ids, ids != PAD
