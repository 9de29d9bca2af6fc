"""Opening a session in a server process, timed as a visitor meets it (tools/bench/abuse.py and door.py): its page
(the time to the answer's first byte, which is the server's work, and to its last), its page at a middle step
(`?at=k`: a replay), and the websocket's first frame (the snapshot the page gets when it connects); with the
process's memory (VmRSS, VmHWM) before and after."""

from __future__ import annotations

import http.client
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

from tests.wsviewer import open_viewer

LENGTH = re.compile(r'id="ws-moment" data-at="[^"]*" data-length="(\d+)"')
TIMEOUT_S = 600.0  # a session that takes minutes to open is measured, not given up on


def vm_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB (empty when it is gone)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def timed_get(base: str, path: str, headers: dict[str, str] | None = None) -> dict:
    """GET `path`: status, seconds to the first byte of the answer and to its end, bytes of the body (as sent:
    compressed if the server compressed it; no Accept-Encoding is sent, so it is the page itself)."""
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=TIMEOUT_S)
    started = time.perf_counter()
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()  # returns once the status line is read: the first byte has come
        first = time.perf_counter() - started
        body = response.read()
        total = time.perf_counter() - started
    except (OSError, http.client.HTTPException) as exc:
        return {"status": None, "error": repr(exc), "total_s": round(time.perf_counter() - started, 3)}
    finally:
        conn.close()
    return {
        "status": response.status,
        "first_byte_s": round(first, 3),
        "total_s": round(total, 3),
        "bytes": len(body),
        "body": body.decode(errors="replace"),
    }


def timed_snapshot(base: str, sid: str, headers: dict[str, str] | None = None) -> dict:
    """Connect the session's websocket and wait for its first frame: seconds to it, and its bytes."""
    started = time.perf_counter()
    cookie = (headers or {}).get("Cookie")
    try:
        ws = open_viewer(base, sid, cookie=cookie, query="lang=en", timeout=TIMEOUT_S)
        try:
            frame = ws.recv(timeout=TIMEOUT_S)
        finally:
            ws.close()
    except Exception as exc:
        return {"status": None, "error": repr(exc), "total_s": round(time.perf_counter() - started, 3)}
    total = round(time.perf_counter() - started, 3)
    return {"status": 101, "first_byte_s": total, "total_s": total, "bytes": len(frame.encode())}


def steps_of(page: str) -> int | None:
    m = LENGTH.search(page)
    return int(m.group(1)) if m else None


def open_over_http(server, sid: str, middle: int | None = None, headers: dict[str, str] | None = None) -> dict:
    """Open session `sid` in `server` (a playground.deploy.procs.Proc): the page, the page at the middle step (given,
    or half the steps the page shows), the websocket's snapshot; the process's memory before and after."""
    before = vm_kib(server.proc.pid)
    page = timed_get(server.url, f"/s/{sid}/", headers)
    steps = steps_of(page.pop("body", "") or "")
    if middle is None:
        middle = (steps or 0) // 2
    at = timed_get(server.url, f"/s/{sid}/?at={middle}", headers)
    at.pop("body", None)
    ws = timed_snapshot(server.url, sid, headers)
    after = vm_kib(server.proc.pid)
    return {
        "steps": steps,
        "middle_step": middle,
        "page": page,
        "middle": at,
        "ws": ws,
        "rss_before_mib": round(before.get("VmRSS", 0) / 1024, 1),
        "rss_after_mib": round(after.get("VmRSS", 0) / 1024, 1),
        "hwm_before_mib": round(before.get("VmHWM", 0) / 1024, 1),
        "hwm_after_mib": round(after.get("VmHWM", 0) / 1024, 1),
    }
