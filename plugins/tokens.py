"""Token ids every plugin shares: the first four ids of every vocabulary are reserved.

``PAD_ID`` (0) fills source and target batches after the real tokens (``src_mask`` is False
there): give embeddings ``padding_idx=PAD_ID``. ``SOS_ID`` (1) is the first decoder input,
``EOS_ID`` (2) ends every target, ``UNK_ID`` (3) stands for a character outside the vocabulary.
Characters get the ids from ``FIRST_CHAR_ID`` on.
"""

from __future__ import annotations

PAD_ID, SOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3

#: The id of a vocabulary's first character (after the four reserved ids).
FIRST_CHAR_ID = 4
