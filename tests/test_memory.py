"""The server's allocator settings (playground/deploy/memory.py): glibc takes them, and one thread trims the heap."""

from __future__ import annotations

import threading

from playground.deploy import memory


def test_it_tunes_glibcs_allocator_and_starts_one_trimming_thread():
    assert memory.return_large_blocks() is True  # this machine's libc is glibc
    assert memory.return_large_blocks() is True
    trimming = [t for t in threading.enumerate() if t.name == "malloc-trim"]
    assert len(trimming) == 1 and trimming[0].daemon and trimming[0].is_alive()
