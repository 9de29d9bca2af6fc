"""Size-prefixed frames: every request and response is an int32 size followed by that many bytes.

A broker refuses a frame whose size is negative or larger than `socket.request.max.bytes` (104857600 by default,
SocketServerConfigs) by closing the connection (NetworkReceive throws InvalidReceiveException); it never buffers it.
`FrameReader` does the same: it reports the bad size before reading a byte of the body. And as a broker takes a
frame's memory from its pool (`queued.max.request.bytes`) once it knows the size, before it reads the body, and
leaves the channel unread while the pool cannot give it (NetworkReceive's MemoryPool), a reader may be handed an
`allocate(size)` that says whether the memory is there: when it is not, the reader stops after the size and goes on
when `feed` is called again.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

# socket.request.max.bytes: 100 MiB
MAX_REQUEST_BYTES = 104_857_600
_SIZE = struct.Struct(">i")


class FrameError(ValueError):
    """The stream cannot be read as frames any more (a broker closes the connection)."""


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def frame_size(prefix: bytes, max_bytes: int = MAX_REQUEST_BYTES) -> int:
    """The size announced by a frame's 4-byte prefix, if a broker would read it."""
    size: int = _SIZE.unpack(prefix)[0]
    if size < 0:
        raise FrameError(f"invalid frame size {size}")
    if size > max_bytes:
        raise FrameError(f"frame of {size} bytes is larger than the maximum of {max_bytes} (socket.request.max.bytes)")
    return size


class FrameReader:
    """Incremental: `feed()` bytes as they arrive, get the complete frames back (their payloads, in order)."""

    def __init__(self, max_bytes: int = MAX_REQUEST_BYTES, allocate: Callable[[int], bool] | None = None) -> None:
        self.max_bytes = max_bytes
        self.allocate = allocate
        self._buffer = bytearray()
        self._need: int | None = None  # the body size of the frame being read, once its prefix is in and allocated
        self.blocked = False  # the last feed stopped at a frame whose memory `allocate` could not give

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        out: list[bytes] = []
        buffer = self._buffer
        self.blocked = False
        while True:
            if self._need is None:
                if len(buffer) < 4:
                    break
                size = frame_size(bytes(buffer[:4]), self.max_bytes)
                if self.allocate is not None and not self.allocate(size):
                    self.blocked = True
                    break
                self._need = size
                del buffer[:4]
            if len(buffer) < self._need:
                break
            out.append(bytes(buffer[: self._need]))
            del buffer[: self._need]
            self._need = None
        return out
