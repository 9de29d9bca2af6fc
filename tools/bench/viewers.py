"""The benches' extra viewers of a session, in a process of their own: websockets that record when a frame carrying
each mark (a version, a value) first arrived, as remote browsers would receive them.

    viewers = ViewerProcess([server.url, ...], sid, 99, r'data-version="(\\d+)"')   # connected, snapshots read
    ... drive the session ...
    seen = viewers.stop()      # one {mark: arrival time in ms since the epoch} per viewer

They run on one asyncio loop in a child process (`python tools/bench/viewers.py`), not as threads of the bench: 99
sync clients are two threads each, and in the bench's own process they held the GIL the driver needs to time its
requests; remote browsers take nothing from the machine under test, and one loop takes least of what can stand in
for them. Viewer i watches through server i modulo the servers given.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

READY = "ready"
OPEN_TIMEOUT_S = 120.0


class ViewerProcess:
    def __init__(self, servers: list[str], sid: str, count: int, pattern: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), sid, str(count), pattern, *servers],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()  # the child says so once every viewer has its snapshot
        if line != READY:
            self.proc.kill()
            raise RuntimeError(f"the viewers' process did not get ready: {line!r}")

    def stop(self) -> list[dict[str, float]]:
        """Close the viewers; what each one saw."""
        out, _ = self.proc.communicate(input="", timeout=OPEN_TIMEOUT_S)
        return json.loads(out)


async def _watch(
    url: str, origin: str, pattern: re.Pattern[str], seen: dict[str, float], opened: asyncio.Event
) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    from tests.wsviewer import BROWSER_LIKE

    async with connect(url, origin=origin, open_timeout=OPEN_TIMEOUT_S, **BROWSER_LIKE) as ws:
        await ws.recv()  # the snapshot
        opened.set()
        try:
            async for frame in ws:
                now = time.time() * 1000.0
                for mark in pattern.findall(str(frame)):
                    seen.setdefault(mark, now)
        except ConnectionClosed:
            return


async def _main(sid: str, count: int, pattern: str, servers: list[str]) -> None:
    from tests.wsviewer import session_url

    compiled = re.compile(pattern)
    seen: list[dict[str, float]] = [{} for _ in range(count)]
    opened = [asyncio.Event() for _ in range(count)]
    tasks = []
    for i in range(count):
        base = servers[i % len(servers)].rstrip("/")
        tasks.append(asyncio.create_task(_watch(session_url(base, sid), base, compiled, seen[i], opened[i])))
        await asyncio.wait_for(opened[i].wait(), OPEN_TIMEOUT_S)  # one at a time, as the threads opened them
    print(READY, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the bench closes our stdin
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    asyncio.run(_main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]))
