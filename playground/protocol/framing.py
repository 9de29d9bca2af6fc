"""Size-prefixed frames: every request and response is an int32 size followed by that many bytes.

A broker refuses a frame whose size is negative or larger than `socket.request.max.bytes` (104857600 by default,
SocketServerConfigs) by closing the connection (NetworkReceive throws InvalidReceiveException); it never buffers it.
`FrameReader` does the same: it reports the bad size before reading a byte of the body.
"""

from __future__ import annotations

import struct

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

    def __init__(self, max_bytes: int = MAX_REQUEST_BYTES) -> None:
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self._need: int | None = None  # the body size of the frame being read, once its prefix is in

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        out: list[bytes] = []
        buffer = self._buffer
        while True:
            if self._need is None:
                if len(buffer) < 4:
                    break
                self._need = frame_size(bytes(buffer[:4]), self.max_bytes)
                del buffer[:4]
            if len(buffer) < self._need:
                break
            out.append(bytes(buffer[: self._need]))
            del buffer[: self._need]
            self._need = None
        return out
