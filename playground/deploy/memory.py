"""The process's allocator: large blocks are given back to the system as they are freed.

glibc's malloc serves a block of 128 KiB or more with its own mmap, and gives it back when it is freed, until a large
block is freed: then it raises that threshold (up to 32 MiB) and serves later large blocks from its heap, whose
memory it keeps. A server that handles megabyte requests and freezes sessions of tens of megabytes (a listening
session's records, session/cache.py) then keeps the high-water mark of every burst for good: under the abuse bench's
Kafka flood, a Daphne's resident set stayed at its peak. Fixing the threshold (M_MMAP_THRESHOLD) keeps it at 128 KiB:
what a burst takes, it gives back. Elsewhere than glibc, nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3
LARGE_BLOCK_BYTES = 128 * 1024


def return_large_blocks() -> bool:
    """True when glibc took the setting."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES))
    except (OSError, AttributeError):
        return False
