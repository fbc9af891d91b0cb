"""Token ids every plugin shares: the first four ids of every vocabulary are reserved.

``PAD_ID`` (0) fills source and target batches after the real tokens (``src_mask`` is False
there): give embeddings ``padding_idx=PAD_ID``. ``SOS_ID`` (1) is the first decoder input,
``EOS_ID`` (2) ends every target, ``UNK_ID`` (3) stands for a token outside the vocabulary.
Tokens (characters, or whitespace-separated words such as phonemes) get the ids from
``FIRST_CHAR_ID`` on.
"""

from __future__ import annotations

from collections.abc import Iterable

PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

#: The id of a vocabulary's first character (after the four reserved ids).
FIRST_CHAR_ID = 4

#: How a task cuts each side's text into tokens: every character is a token, or the tokens are
#: separated by whitespace (``"P EY1 S T"`` is four phonemes).
TOKENIZATIONS = ("characters", "whitespace")


def split_tokens(text: str, tokenization: str = "characters") -> list[str]:
    """The tokens of ``text``: its characters, or its whitespace-separated words."""
    return list(text) if tokenization == "characters" else text.split()


def join_tokens(tokens: Iterable[str], tokenization: str = "characters") -> str:
    """The text of ``tokens``: concatenated characters, or the tokens joined by one space."""
    return ("" if tokenization == "characters" else " ").join(tokens)


def unit_name(tokenization: str = "characters") -> str:
    """What a message calls the tokens of a side: ``"characters"`` or ``"tokens"``."""
    return "characters" if tokenization == "characters" else "tokens"


def alphabet_tokens(alphabet: str | Iterable[str], tokenization: str = "characters") -> tuple[str, ...]:
    """The distinct tokens an alphabet declares, sorted: a string is cut by ``tokenization``
    (``"abc"`` or ``"AA AE AH"``); any other iterable lists the tokens themselves."""
    tokens = split_tokens(alphabet, tokenization) if isinstance(alphabet, str) else list(alphabet)
    return tuple(sorted(set(tokens)))
