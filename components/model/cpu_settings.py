"""Process-wide CPU settings that training and decoding turn on."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

import torch

_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
#: Freed memory the process keeps at the top of its heap for the next allocations.
KEPT_FREE = 128 << 20


def flush_denormals() -> None:
    """Treat denormal floats as zero on the CPU (process-wide). Vanishing recurrent gradients
    turn into denormals, which make CPU arithmetic over 10x slower (reverse task, lengths 5-40:
    31 vs 505 samples/s, identical losses); their values are below anything that matters."""
    torch.set_flush_denormal(True)


@functools.cache
def retain_freed_memory() -> bool:
    """Have glibc keep freed memory for reuse instead of returning it to the kernel.

    A training step allocates and frees tens of MB of activations. With glibc's defaults the
    large blocks are mapped afresh every time and each new page faults on first touch (batch
    1,000 of the date task: 1,555 page faults per step; under 200 with this setting, and the
    step ~5% faster). The process keeps up to :data:`KEPT_FREE` of freed memory at the top of
    its heap: enough for that step (0-100 page faults a step at 128 MB, 5,000-9,500 at 64 MB),
    half of the 256 MB kept before; :func:`release_freed_memory` hands back the rest between
    phases. Returns False (and changes
    nothing) where the C library is not glibc.
    """
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    return all(
        mallopt(option, value) == 1
        for option, value in ((_M_MMAP_THRESHOLD, 32 << 20), (_M_TRIM_THRESHOLD, KEPT_FREE), (_M_TOP_PAD, KEPT_FREE // 4))
    )


def release_freed_memory() -> bool:
    """Hand the memory freed so far back to the kernel (glibc's ``malloc_trim``: the free pages
    inside the heap too, which no threshold returns), at the end of a phase whose tensors are
    gone (training, evaluation), so that the next phase starts from what is live. Takes a few
    milliseconds; False (nothing done) where the C library is not glibc."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return False
    trim(0)
    return True


def _libc_function(name: str) -> Any:
    """glibc's function ``name``, or None where the C library has none."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


def tune_cpu() -> None:
    """Both settings above; idempotent."""
    flush_denormals()
    retain_freed_memory()
