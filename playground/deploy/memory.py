"""The process's allocator: what a burst takes, the process gives back.

glibc's malloc serves a block of 128 KiB or more with its own mmap, and gives it back when it is freed, until a large
block is freed: then it raises that threshold (up to 32 MiB) and serves later large blocks from its heap, whose
memory it keeps. A server that handles megabyte requests and freezes sessions of tens of megabytes (a listening
session's records, session/cache.py) then keeps the high-water mark of every burst for good: under the abuse bench's
Kafka flood, a Daphne's resident set stayed at its peak. Fixing the threshold (M_MMAP_THRESHOLD) keeps it at 128 KiB.

Two more, measured with `tools/bench/abuse.py` (every attack at once; the second Daphne's VmHWM, which at the end opens
every session the first one served): glibc gives each thread that meets a locked arena an arena of its own (up to 8
per core), and the memory freed in one stays there, for that thread only: the event loop, Django's thread for sync
views, the listeners' threads and the executors each kept their own. Two arenas (M_ARENA_MAX): 651 -> 510 MiB. And
free memory inside the heap (below its top) goes back only when asked (malloc_trim), which a thread here asks every
TRIM_EVERY_S: 510 -> 464 MiB, the resident set at the end 509 -> 382 MiB. Elsewhere than glibc, nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
LARGE_BLOCK_BYTES = 128 * 1024
ARENAS = 2
TRIM_EVERY_S = 5.0

_trimming: list[threading.Thread] = []


def return_large_blocks() -> bool:
    """True when glibc took the settings (and a thread trims the heap from then on, one per process)."""
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        libc = ctypes.CDLL(name)
        took = bool(libc.mallopt(M_MMAP_THRESHOLD, LARGE_BLOCK_BYTES)) and bool(libc.mallopt(M_ARENA_MAX, ARENAS))
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    if took and not _trimming:

        def trimming() -> None:
            while True:  # ctypes lets the GIL go for the call: Python's threads run on meanwhile
                time.sleep(TRIM_EVERY_S)
                trim(0)

        thread = threading.Thread(target=trimming, name="malloc-trim", daemon=True)
        _trimming.append(thread)
        thread.start()
    return took
