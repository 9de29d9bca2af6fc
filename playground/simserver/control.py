"""Stopping and starting one simulated broker from another process: what KAFKA_BROKER_CONTROL runs for the real
backend's `broker.stop` / `broker.start` steps against `manage.py simcluster`.

The server side listens on loopback only and wants a token it printed (in the command template), so only whoever read
the template can act. One line per request, `<token> <stop|start> <broker>`, one line back, `ok` or `error: ...`.
The client side is this module's command line, as the template names it:

    python -m playground.simserver.control --port P --token T {action} {broker}

It exits 0 once the broker is stopped (its listener closed) or started (its listener accepting again), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import socket
import sys
from collections.abc import Awaitable, Callable

ACTIONS = ("stop", "start")
TIMEOUT_S = 10.0


async def serve(
    token: str, act: Callable[[str, int], Awaitable[None]], host: str = "127.0.0.1"
) -> asyncio.AbstractServer:
    """The control endpoint: `act(action, broker)` for each valid request. Returns the listening server."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), TIMEOUT_S)
            parts = line.decode("utf-8", "replace").split()
            if len(parts) != 3 or not hmac.compare_digest(parts[0], token):
                answer = "error: bad token or request"
            elif parts[1] not in ACTIONS or not parts[2].isdigit():
                answer = f"error: expected one of {', '.join(ACTIONS)} and a broker id"
            else:
                try:
                    await act(parts[1], int(parts[2]))
                    answer = "ok"
                except Exception as e:
                    answer = f"error: {e}"
            writer.write((answer + "\n").encode())
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, 0)


def request(port: int, token: str, action: str, broker: int, timeout_s: float = TIMEOUT_S) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(f"{token} {action} {broker}\n".encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    return data.decode("utf-8", "replace").strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="stop or start one broker of a `manage.py simcluster`")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("action", choices=ACTIONS)
    parser.add_argument("broker", type=int)
    args = parser.parse_args(argv)
    try:
        answer = request(args.port, args.token, args.action, args.broker)
    except OSError as e:
        print(f"cannot reach the simulated cluster's control endpoint on port {args.port}: {e}", file=sys.stderr)
        return 1
    if answer != "ok":
        print(answer or "no answer", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
