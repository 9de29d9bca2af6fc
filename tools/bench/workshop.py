"""A workshop at its real size, on the parts a deployment uses: 40 attendees and the facilitator's board.

    .venv/bin/python tools/bench/workshop.py [--attendees 40] [--pace 1.0,2.5] [--join-window 10]
                                             [--db tcp|socket] [--dev] [--keep] [--dump FILE] [--json]

Starts a throw-away PostgreSQL (tests/pg.py), a redis-server, two Daphne processes on the same DATABASE_URL and
REDIS_URL (production mode, as `docker compose` serves a room: PLAYGROUND_PUBLIC_URL is nginx's address, static
files collected and served by WhiteNoise; PLAYGROUND_TRUSTED_PROXIES=127.0.0.1) and nginx in front of them as the
one address everybody uses (to the process with the fewest open connections, websockets included). Everything is stopped at the end, whatever happens.

Then a workshop runs on the fencing exercise (ex-who-is-fenced: 16 steps, 3 questions):
- the facilitator creates the room over HTTP (POST /w/create/) and opens the board (/w/<code>/board/) in Chromium
  before anybody joins, as a facilitator does (how many cards it shows once everybody has joined is printed; then
  it is reloaded); a MutationObserver records, with performance.timeOrigin + performance.now(), each time an
  attendee's card (#seat-<attendee id>) is swapped and what its progress says ("step k/16": its first k commands), and
  htmx:wsBeforeMessage when the card's message reached the page; a second board viewer, a websocket with the
  facilitator's cookie, records when the same messages left the server's side (no browser in the way);
- N-1 attendees are threads: each joins over HTTP (GET /w/, POST /w/join/, GET /w/<code>/ -> 302 to their own
  session, GET /s/<id>/), opens the session's websocket (tests/wsviewer.py, with their cookies) and the room's
  websocket, and works through the exercise at a human pace (a command every 1.0-2.5 s, jittered, and never before
  the previous one is on their screen): the question's answer first (POST /s/<id>/predict/, a random choice), then
  POST /s/<id>/step/, to the scenario's end. For each command: when it was sent, its HTTP status, and when the frame
  carrying the new #state-version reached the attendee's own websocket;
- one attendee is a Chromium page: joins through the form, presses "n" or clicks the question's first choice;
  event-to-screen from the key press / click (a capture listener's timestamp) to the new #state-version in the DOM
  (the MutationObserver of tools/bench/web.py).

It prints errors (a command answered other than 204, a websocket closed under an attendee, an update that never
came, a board card that never changed, a log line of the servers at WARNING or worse), attendee event-to-screen
(socket attendees and the Chromium attendee separately; aim p95 <= 150 ms), board update (an attendee's command to
the card changing on the board in Chromium; aim p95 <= 250 ms), commands per second sustained, the request times
nginx measured, joining and the board's first render, the servers' memory (VmRSS at start and end, VmHWM) and CPU,
and the load average. The socket attendees' times include this process's own scheduling (some 200 threads on the
same 2 cores as the servers and Chromium); the Chromium figures are taken in the page.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import os
import random
import re
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.deploy import procs  # noqa: E402
from tests import pg  # noqa: E402
from tests.web.http import Browserish  # noqa: E402
from tests.wsviewer import ConnectionClosed, open_socket, open_viewer  # noqa: E402
from tools.bench.web import CHROMIUM, CHROMIUM_ARGS, percentile  # noqa: E402

SCENARIO = "ex-who-is-fenced"
SCENARIO_FILE = ROOT / "scenarios" / "17-ex-who-is-fenced.yaml"
VERSION = re.compile(r'id="state-version" data-version="(\d+)"')
UPDATE_TIMEOUT_S = 10.0  # an update not on the attendee's screen after this long counts as missing
AIM_ATTENDEE_P95_MS = 150.0
AIM_BOARD_P95_MS = 250.0

# The Chromium attendee's page: when each version's fragments are in the DOM (as tools/bench/web.py), and when the
# attendee pressed a key or clicked (capture phase: before the page's own handlers send anything).
OBSERVE_ATTENDEE = """() => {
  window.__seen = {};
  window.__sent = [];
  const now = () => performance.timeOrigin + performance.now();
  const el = () => document.getElementById('state-version');
  const note = () => {
    const v = el() && el().dataset.version;
    if (v && !(v in window.__seen)) window.__seen[v] = now();
  };
  note();
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, attributes: true, attributeFilter: ['data-version']});
  document.addEventListener('keydown', () => window.__sent.push(now()), true);
  document.addEventListener('click', () => window.__sent.push(now()), true);
}"""

# The board: every card swapped in (htmx's out-of-band swap replaces the <article id="seat-...">), with its session
# and its progress text, when it entered the DOM.
OBSERVE_BOARD = r"""() => {
  window.__board = [];
  const rec = (el, t) => {
    const p = el.querySelector('.progress');
    window.__board.push([el.id, el.dataset.session || '', p ? p.textContent.trim() : '', t]);
  };
  new MutationObserver((mutations) => {
    const t = performance.timeOrigin + performance.now();
    for (const m of mutations) {
      for (const n of m.addedNodes) {
        if (n.nodeType !== 1) continue;
        const seat = n.classList.contains('seat') ? n : (n.closest ? n.closest('.seat') : null);
        if (seat) rec(seat, t);
      }
    }
  }).observe(document.body, {subtree: true, childList: true});
  // When each card's message reached the page (before htmx parses and swaps it): splits the server's and the
  // network's part of the delay from the page's own.
  window.__boardFrames = [];
  const CARD = /id="seat-([^"]+)"[\s\S]*?data-session="([^"]*)"[\s\S]*?class="progress">([\s\S]*?)<\/p>/;
  document.addEventListener('htmx:wsBeforeMessage', (e) => {
    const t = performance.timeOrigin + performance.now();
    const m = CARD.exec(String(e.detail && e.detail.message || ''));
    if (m) window.__boardFrames.push(['seat-' + m[1], m[2], m[3].replace(/<[^>]*>/g, '').replace(/&nbsp;/g, ' ').trim(), t]);
  });
  return Array.from(document.querySelectorAll('.seat')).map(s => {
    const p = s.querySelector('.progress');
    return [s.id, s.dataset.session || '', p ? p.textContent.trim() : ''];
  });
}"""

# What a page's websockets and frames say: the session's socket (htmx's ws-connect), the follow-me panel's frame,
# and the room's frame for follow-me (data-follow-src: the page docks the panel itself, without a reload).
WS_CONNECT = re.compile(r'ws-connect="/ws/s/([^/"]+)/\??([^"]*)"')
FOLLOW_IFRAME = re.compile(r'class="follow-panel"[\s\S]*?<iframe[^>]* src="([^"]+)"')
FOLLOW_ON = re.compile(r'data-follow="on"(?: data-follow-src="([^"]+)")?')
FOLLOW_OFF = re.compile(r'data-follow="off"( data-follow-src="")?')
SECOND_ITEM = "ex-isolation-levels"  # the agenda's second item: where the room moves to
FOLLOW_STEPS = 5  # the facilitator's steps while the room follows (each reaches every attendee's panel)

STEP_IN_TEXT = re.compile(r"step\s+(\d+)/(\d+)")


def now_ms() -> float:
    return time.time() * 1000.0


def stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None, "mean_ms": None}
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 0.50), 1),
        "p95_ms": round(percentile(values, 0.95), 1),
        "max_ms": round(max(values), 1),
        "mean_ms": round(statistics.fmean(values), 1),
    }


def plan_of_scenario() -> tuple[int, list[tuple[int, int]]]:
    """The exercise's step count and its questions as (step index, number of choices), read with the app's loader."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
    import django

    django.setup()
    from playground.scenario import parse_scenario

    scenario = parse_scenario(SCENARIO_FILE.read_text(), SCENARIO_FILE.name)
    questions = [(s.index, len(s.predict["choices"])) for s in scenario.steps if s.predict]
    return len(scenario.steps), questions


# ----------------------------------------------------------------------------------------------- the servers
def proc_status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB (empty when it is gone)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def cpu_s(pid: int, children: bool = False) -> float:
    """User + system CPU seconds of a process (with children=True, also of its children it has waited for)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def children_of(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(entry.name))
    return out


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Servers:
    """PostgreSQL, Redis, two Daphne processes and nginx; `close()` stops whatever was started."""

    def __init__(self, work: Path, db: str, dev: bool, processes: int = 2) -> None:
        self.work = work
        self.stack = contextlib.ExitStack()
        try:
            self.pg = pg.start()
            self.stack.callback(self.pg.stop)
            self.redis = procs.start_redis(work / "redis")
            self.stack.callback(self.redis.stop)
            nginx_port = procs.free_port()
            extra = {
                "DATABASE_URL": self.pg.url() if db == "tcp" else self.pg.socket_url(),
                "PLAYGROUND_TRUSTED_PROXIES": "127.0.0.1",
                "DJANGO_DEBUG": "0",
            }
            if not dev:
                # Production mode, as `docker compose up` with PLAYGROUND_PUBLIC_URL serves a room.
                extra.update(
                    PLAYGROUND_PUBLIC_URL=f"http://127.0.0.1:{nginx_port}", PLAYGROUND_VAR_DIR=str(work / "var")
                )
            self.env = procs.django_env(work / "unused.sqlite3", self.redis.extra["url"], **extra)
            procs.migrate(self.env)
            if not dev:
                import subprocess

                subprocess.run(
                    [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"],
                    env=self.env,
                    check=True,
                    cwd=ROOT,
                )
            self.daphnes = []
            for _ in range(processes):
                d = procs.start_daphne(self.env, work / "daphne")
                self.stack.callback(d.stop)
                self.daphnes.append(d)
            self.nginx = procs.start_nginx(self.daphnes, work, port=nginx_port)
            self.stack.callback(self.nginx.stop)
        except BaseException:
            self.stack.close()
            raise

    @property
    def url(self) -> str:
        return self.nginx.url

    def postmaster(self) -> int | None:
        try:
            return int((self.pg.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def db_stats(self) -> dict:
        """PostgreSQL's own counters for the database: connections opened (sessions), transactions committed,
        rows fetched and returned. Read over a connection of its own (which counts one session)."""
        import psycopg

        try:
            with psycopg.connect(self.pg.url(), autocommit=True, connect_timeout=10) as conn:
                row = conn.execute(
                    "SELECT sessions, xact_commit, tup_returned, tup_fetched FROM pg_stat_database "
                    "WHERE datname = current_database()"
                ).fetchone()
        except psycopg.Error:
            return {}
        return dict(zip(("sessions", "xact_commit", "tup_returned", "tup_fetched"), row))

    def memory(self) -> dict:
        out = {"daphne": [], "postgres": None, "redis": None}
        for d in self.daphnes:
            s = proc_status(d.proc.pid)
            out["daphne"].append(
                {
                    "pid": d.proc.pid,
                    "rss_mib": round(s.get("VmRSS", 0) / 1024, 1),
                    "hwm_mib": round(s.get("VmHWM", 0) / 1024, 1),
                }
            )
        master = self.postmaster()
        if master:
            pids = [master, *children_of(master)]
            out["postgres"] = {
                "processes": len(pids),
                "rss_mib": round(sum(proc_status(p).get("VmRSS", 0) for p in pids) / 1024, 1),
                "pss_mib": round(sum(pss_kib(p) for p in pids) / 1024, 1),
            }
        out["redis"] = {"rss_mib": round(proc_status(self.redis.proc.pid).get("VmRSS", 0) / 1024, 1)}
        return out

    def cpu(self) -> dict:
        master = self.postmaster()
        nginx = [self.nginx.proc.pid, *children_of(self.nginx.proc.pid)]
        return {
            "daphne": [cpu_s(d.proc.pid) for d in self.daphnes],
            # backends come and go (a connection per request): the postmaster's waited-for children count too
            "postgres": (cpu_s(master, children=True) + sum(cpu_s(p) for p in children_of(master))) if master else 0.0,
            "redis": cpu_s(self.redis.proc.pid),
            "nginx": sum(cpu_s(p) for p in nginx),
            "bench": sum(os.times()[:2]),
            "machine": machine_busy(),
        }

    def close(self) -> None:
        self.stack.close()


def cpu_delta(a: dict, b: dict) -> dict:
    busy = (b["machine"][0] - a["machine"][0]) / max(1, b["machine"][1] - a["machine"][1])
    return {
        "daphne_s": [round(y - x, 1) for x, y in zip(a["daphne"], b["daphne"])],
        "postgres_s": round(b["postgres"] - a["postgres"], 1),
        "redis_s": round(b["redis"] - a["redis"], 1),
        "nginx_s": round(b["nginx"] - a["nginx"], 1),
        "bench_client_s": round(b["bench"] - a["bench"], 1),
        "machine_busy_pct": round(100 * busy, 1),
    }


# ------------------------------------------------------------------------------------------------ HTTP client
class Client(Browserish):
    """tests/web/http.py's client (cookies, CSRF), plus a GET that returns the redirect's Location."""

    def get_redirect(self, path: str) -> tuple[int, str | None, str]:
        try:
            with self.opener.open(self.base + path, timeout=30) as r:
                return r.status, None, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Location"), e.read().decode(errors="replace")

    def cookie_header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)

    def room_id(self) -> str | None:
        return next((c.name[len("att_") :] for c in self.jar if c.name.startswith("att_")), None)


def open_room_socket(base: str, room_id: str, cookie: str, timeout: float = 60):
    """The room's websocket (/ws/w/<room id>/), opened as the page's roombar does (same settings as open_viewer)."""
    url = "ws" + base.removeprefix("http") + f"/ws/w/{room_id}/?lang=en"
    return open_socket(url, base, {"Cookie": cookie}, timeout)


CARD_IN_FRAME = re.compile(r'id="seat-([^"]+)"[\s\S]*?data-session="([^"]*)"[\s\S]*?class="progress">([\s\S]*?)</p>')


class BoardSocket:
    """A second board viewer without a browser (the facilitator's laptop beside the projector's Chromium): the
    room's websocket with the facilitator's cookie, recording when each card's message arrived. It tells the
    server's part of the board's delay from the page's."""

    def __init__(self, base: str, room_id: str, cookie: str, errors: Errors) -> None:
        self.errors = errors
        self.ws = open_room_socket(base, room_id, cookie)
        self.cards: list[tuple[str, str, float]] = []  # (session, progress text, arrival ms)
        self.questions = 0
        self.closing = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                frame = self.ws.recv(timeout=None)
                t = now_ms()
                for m in CARD_IN_FRAME.finditer(frame):
                    self.cards.append((m.group(2), re.sub(r"<[^>]*>", "", m.group(3)).replace("&nbsp;", " "), t))
                if 'id="room-questions"' in frame:
                    self.questions += 1
        except (ConnectionClosed, OSError) as exc:
            if not self.closing:
                self.errors.add("websocket closed", f"board socket: {exc!r}")

    def close(self) -> None:
        self.closing = True
        with contextlib.suppress(Exception):
            self.ws.close()


class Errors:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[tuple[str, str]] = []

    def add(self, kind: str, detail: str) -> None:
        with self.lock:
            self.items.append((kind, detail))

    def counts(self) -> dict[str, int]:
        with self.lock:
            return dict(Counter(k for k, _ in self.items))

    def examples(self, per_kind: int = 3) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        with self.lock:
            for kind, detail in self.items:
                if len(out.setdefault(kind, [])) < per_kind:
                    out[kind].append(detail)
        return out


# -------------------------------------------------------------------------------------------- socket attendee
class Attendee:
    """One attendee in a thread of their own: joins, then works through the exercise at a human pace."""

    def __init__(
        self,
        index: int,
        base: str,
        code: str,
        steps: int,
        questions: list[tuple[int, int]],
        pace: tuple[float, float],
        seed: int,
        errors: Errors,
        go: threading.Event,
    ) -> None:
        self.index, self.base, self.code = index, base, code
        self.name = f"Attendee {index:02d}"
        self.steps, self.questions = steps, dict(questions)
        self.pace, self.rng = pace, random.Random(seed)
        self.errors, self.go = errors, go
        self.start_at = 0.0  # when (time.monotonic()) this attendee opens the join page
        self.joined = threading.Event()
        self.done = threading.Event()
        self.sid: str | None = None  # the exercise's session
        self.page_sid: str | None = None  # the session the page shows (after a move, the next item's)
        self.join_ms: dict[str, float] = {}
        self.commands: list[dict] = []  # {"name", "t0", "status", "post_ms", "frame_ms", "count"}
        self.cond = threading.Condition()
        self.seen: dict[int, float] = {}
        self.sizes: dict[int, int] = {}  # version -> bytes of the frame that brought it
        self.version = -1
        self.closing = False
        self.ws = self.room_ws = self.follow_ws = None
        self.room_frames: list[tuple[float, str]] = []
        self.follow_seen: dict[int, float] = {}  # the facilitator's session: version -> when its frame came
        self.follow_frame_ms = self.follow_ms = self.move_frame_ms = self.move_ms = None
        self.thread = threading.Thread(target=self._run, name=f"attendee-{index}", daemon=True)

    # ---- the websockets' readers
    def _read_session(self, ws) -> None:
        try:
            while True:
                frame = ws.recv(timeout=None)
                t = now_ms()
                with self.cond:
                    for m in VERSION.finditer(frame):
                        v = int(m.group(1))
                        self.seen.setdefault(v, t)
                        self.sizes.setdefault(v, len(frame.encode()))
                        self.version = max(self.version, v)
                    self.cond.notify_all()
        except (ConnectionClosed, OSError) as exc:
            if not self.closing and ws is self.ws:
                self.errors.add("websocket closed", f"{self.name} session {self.sid}: {exc!r}")

    def _read_room(self, ws) -> None:
        try:
            while True:
                frame = ws.recv(timeout=None)
                t = now_ms()
                with self.cond:
                    self.room_frames.append((t, frame))
                    self.cond.notify_all()
        except (ConnectionClosed, OSError) as exc:
            if not self.closing and ws is self.room_ws:
                self.errors.add("websocket closed", f"{self.name} room socket: {exc!r}")

    def _room_frame(self, after: int, pattern: re.Pattern, timeout: float) -> tuple[float, re.Match] | None:
        """The first frame of the room's socket from index `after` on that matches `pattern`."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, frame in self.room_frames[after:]:
                    if m := pattern.search(frame):
                        return t, m
                after = len(self.room_frames)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(timeout=left)

    def _open_page(self, path: str) -> tuple[str, str, str]:
        """GET a session page; its session id and the query its page opens the session's websocket with."""
        status, page = self.client.get(path)
        if status != 200:
            raise RuntimeError(f"GET {path} -> {status}")
        m = WS_CONNECT.search(page)
        if not m:
            raise RuntimeError(f"GET {path}: no session websocket on the page")
        return m.group(1), html.unescape(m.group(2) or ""), page

    def _watch(self, sid: str, query: str):
        """A session's websocket, as the page opens it, until the first frame that says which version it shows."""
        ws = open_viewer(self.base, sid, cookie=self.client.cookie_header(), query=query, timeout=60)
        deadline = time.monotonic() + UPDATE_TIMEOUT_S * 3
        while True:
            frame = ws.recv(timeout=max(0.1, deadline - time.monotonic()))
            if VERSION.search(frame):
                return ws, frame

    def _swap_own(self, sid: str, query: str) -> None:
        """The page was (re)loaded: its session's socket and the room's socket open again."""
        old, old_room = self.ws, self.room_ws
        self.ws, _snapshot = self._watch(sid, query)
        with self.cond:
            # the page's session from now on (the exercise's commands stay counted under self.sid)
            self.page_sid = sid
        threading.Thread(target=self._read_session, args=(self.ws,), daemon=True).start()
        self.room_ws = open_room_socket(self.base, self.client.room_id(), self.client.cookie_header())
        threading.Thread(target=self._read_room, args=(self.room_ws,), daemon=True).start()
        for ws in (old, old_room):
            with contextlib.suppress(Exception):
                ws.close()

    # ---- the facilitator switches follow-me on, and moves the room (what rooms.js does, over HTTP and sockets)
    def react_follow(self, after: int, t0: float) -> None:
        """Follow-me on: the facilitator's session in a panel of this page, watch-only and live. Either the frame
        names it (data-follow-src: rooms.js docks the panel, no reload) or the page reloads and frames it."""
        try:
            got = self._room_frame(after, FOLLOW_ON, timeout=30)
            if got is None:
                self.errors.add("follow-me not followed", f"{self.name}: no follow frame within 30 s")
                return
            self.follow_frame_ms = got[0] - t0
            src = got[1].group(1)
            if src is None:  # the page reloads, and its follow panel frames the facilitator's session
                _sid, query, page = self._open_page(f"/s/{self.page_sid}/")
                m = FOLLOW_IFRAME.search(page)
                if not m:
                    raise RuntimeError("the reloaded page has no follow panel")
                src = m.group(1)
                self._swap_own(self.page_sid, query)
            fsid, query, _page = self._open_page(html.unescape(src))
            self.follow_ws, _snapshot = self._watch(fsid, query)
            self.follow_ms = now_ms() - t0
            threading.Thread(target=self._read_follow, args=(self.follow_ws,), daemon=True).start()
        except Exception as exc:
            self.errors.add("follow-me failed", f"{self.name}: {exc!r}")

    def _read_follow(self, ws) -> None:
        try:
            while True:
                frame = ws.recv(timeout=None)
                t = now_ms()
                with self.cond:
                    for m in VERSION.finditer(frame):
                        self.follow_seen.setdefault(int(m.group(1)), t)
                    self.cond.notify_all()
        except (ConnectionClosed, OSError):
            pass

    def react_unfollow(self, after: int) -> None:
        try:
            got = self._room_frame(after, FOLLOW_OFF, timeout=30)
            if got is None:
                self.errors.add("follow-me not followed", f"{self.name}: no follow-off frame within 30 s")
                return
            if self.follow_ws is not None:
                with contextlib.suppress(Exception):
                    self.follow_ws.close()
                self.follow_ws = None
            if not got[1].group(1):  # an older page reloads on every switch
                _sid, query, _page = self._open_page(f"/s/{self.page_sid}/")
                self._swap_own(self.page_sid, query)
        except Exception as exc:
            self.errors.add("follow-me failed", f"{self.name}: {exc!r}")

    def react_move(self, after: int, item: int, t0: float) -> None:
        """The room moved: rooms.js goes to /w/<code>/, which sends the page to the attendee's own session for the
        new item (made on the way when there is none yet)."""
        try:
            got = self._room_frame(after, re.compile(rf'data-goto="([^"]+)" data-item="{item}"'), timeout=30)
            if got is None:
                self.errors.add("move not followed", f"{self.name}: no move frame within 30 s")
                return
            self.move_frame_ms = got[0] - t0
            status, location, body = self.client.get_redirect(html.unescape(got[1].group(1)))
            if status != 302 or not location:
                raise RuntimeError(f"GET {got[1].group(1)} -> {status}: {body[:200]}")
            sid, query, _page = self._open_page(location)
            self._swap_own(sid, query)
            self.move_ms = now_ms() - t0
        except Exception as exc:
            self.errors.add("move failed", f"{self.name}: {exc!r}")

    # ---- joining
    def _join(self) -> None:
        c = self.client = Client(self.base)
        t0 = time.perf_counter()
        status, _ = c.get(f"/w/?code={self.code}")
        if status != 200:
            raise RuntimeError(f"GET /w/ -> {status}")
        t1 = time.perf_counter()
        status, body, headers = c.post("/w/join/", {"code": self.code.lower(), "name": self.name})
        if status != 302:
            raise RuntimeError(f"POST /w/join/ -> {status}: {body[:300]}")
        t2 = time.perf_counter()
        status, location, body = c.get_redirect(headers["Location"])  # /w/<code>/ -> the attendee's own session
        if status != 302 or not location:
            raise RuntimeError(f"GET {headers['Location']} -> {status}: {body[:300]}")
        t3 = time.perf_counter()
        self.sid = self.page_sid = re.search(r"/s/([^/]+)/", location).group(1)
        status, page = c.get(f"/s/{self.sid}/")
        if status != 200:
            raise RuntimeError(f"GET /s/{self.sid}/ -> {status}")
        t4 = time.perf_counter()
        m = VERSION.search(page)
        if m:
            self.version = int(m.group(1))
        cookie, room_id = c.cookie_header(), c.room_id()
        self.ws = open_viewer(self.base, self.sid, cookie=cookie, timeout=60)
        snapshot = self.ws.recv(timeout=60)
        if 'id="ws-error"' in snapshot and "state-version" not in snapshot:
            raise RuntimeError(f"session socket: {snapshot[:300]}")
        for m in VERSION.finditer(snapshot):
            self.version = max(self.version, int(m.group(1)))
        self.room_ws = open_room_socket(self.base, room_id, cookie)
        t5 = time.perf_counter()
        threading.Thread(target=self._read_session, args=(self.ws,), daemon=True).start()
        threading.Thread(target=self._read_room, args=(self.room_ws,), daemon=True).start()
        self.join_ms = {
            "join_page": (t1 - t0) * 1000,
            "join_post": (t2 - t1) * 1000,
            "seat": (t3 - t2) * 1000,
            "session_page": (t4 - t3) * 1000,
            "sockets": (t5 - t4) * 1000,
            "total": (t5 - t0) * 1000,
        }

    # ---- working through the exercise
    def _plan(self) -> list[tuple[str, dict]]:
        plan = []
        for k in range(self.steps):
            if k in self.questions:
                plan.append(("predict", {"n": str(k), "choice": str(self.rng.randrange(self.questions[k]))}))
            plan.append(("step", {}))
        return plan

    def _work(self) -> None:
        next_at = time.monotonic() + self.rng.uniform(0.0, self.pace[1])
        count = steps_done = 0
        previous_upstream = None
        for name, data in self._plan():
            time.sleep(max(0.0, next_at - time.monotonic()))
            with self.cond:
                before = self.version
            t0 = now_ms()
            status, body, headers = self.client.post(f"/s/{self.sid}/{name}/", data)
            post_ms = now_ms() - t0
            next_at = time.monotonic() - post_ms / 1000 + self.rng.uniform(*self.pace)
            upstream = headers.get("X-Upstream")
            record = {
                "name": name,
                "t0": t0,
                "status": status,
                "post_ms": post_ms,
                "frame_ms": None,
                "count": None,
                "upstream": upstream,
                "switched": previous_upstream is not None and upstream != previous_upstream,
                "frame_bytes": None,
            }
            previous_upstream = upstream
            self.commands.append(record)
            if status != 204:
                self.errors.add(
                    f"HTTP {status}", f"{self.name} POST /s/{self.sid}/{name}/ {data}: {body.strip()[:200]}"
                )
                continue
            count += 1
            record["count"] = count
            # a prediction moves no step: the board's card changes with the steps (step k: the first k commands)
            steps_done += name == "step"
            record["step"] = steps_done if name == "step" else None
            deadline = time.monotonic() + UPDATE_TIMEOUT_S
            with self.cond:
                while before + 1 not in self.seen and time.monotonic() < deadline:
                    self.cond.wait(timeout=max(0.0, deadline - time.monotonic()))
                arrived = self.seen.get(before + 1)
            if arrived is None:
                self.errors.add(
                    "missing update",
                    f"{self.name} {name} #{count}: no version {before + 1} within "
                    f"{UPDATE_TIMEOUT_S:.0f} s (last seen {self.version})",
                )
            else:
                record["frame_ms"] = arrived - t0
                record["frame_bytes"] = self.sizes.get(before + 1)

    def _run(self) -> None:
        try:
            self._join()
        except Exception as exc:
            self.errors.add("join failed", f"{self.name}: {exc!r}")
            self.joined.set()
            self.done.set()
            return
        self.joined.set()
        self.go.wait()
        try:
            self._work()
        except Exception as exc:
            self.errors.add("attendee failed", f"{self.name}: {exc!r}")
        finally:
            self.done.set()

    def close(self) -> None:
        self.closing = True
        for ws in (self.ws, self.room_ws, self.follow_ws):
            if ws is not None:
                with contextlib.suppress(Exception):
                    ws.close()


# ------------------------------------------------------------------------------------------ Chromium attendee
class BrowserAttendee:
    """The attendee in Chromium: joins through the form, presses "n" or clicks the first choice of a question."""

    def __init__(
        self, browser, base: str, code: str, total: int, pace: tuple[float, float], seed: int, errors: Errors
    ) -> None:
        self.base, self.code, self.total, self.pace = base, code, total, pace
        self.rng, self.errors = random.Random(seed), errors
        self.name = "Chromium"
        self.ctx = browser.new_context(viewport={"width": 1440, "height": 1000}, locale="en-US")
        self.page = self.ctx.new_page()
        self.statuses: list[tuple[str, int]] = []
        self.page.on("response", self._response)
        self.commands: list[dict] = []
        self.sid: str | None = None
        self.join_ms = 0.0
        self.follow_ms = self.move_ms = None

    def _response(self, response) -> None:
        req = response.request
        if req.method == "POST" and re.search(r"/s/[^/]+/(step|predict)/$", req.url):
            self.statuses.append((req.url, response.status))
            if response.status != 204:
                self.errors.add(f"HTTP {response.status}", f"Chromium POST {req.url.replace(self.base, '')}")

    def join(self) -> None:
        t0 = time.perf_counter()
        page = self.page
        page.goto(self.base + "/w/", wait_until="load")
        page.fill("input[name=code]", self.code.lower())
        page.fill("input[name=name]", self.name)
        page.locator("form.join-form button.primary").click()
        page.wait_for_url(re.compile(r"/s/[^/]+/$"), timeout=60000)
        page.wait_for_selector("#ws-status[data-state=open]", timeout=60000)
        self.join_ms = (time.perf_counter() - t0) * 1000
        self.sid = re.search(r"/s/([^/]+)/$", page.url).group(1)
        page.evaluate(OBSERVE_ATTENDEE)

    def _version(self) -> int:
        return int(self.page.locator("#state-version").get_attribute("data-version"))

    def work(self, stop_at: float) -> None:
        page = self.page
        next_at = time.monotonic() + self.rng.uniform(0.0, self.pace[1])
        count = steps_done = 0
        while count < self.total and time.monotonic() < stop_at:
            time.sleep(max(0.0, next_at - time.monotonic()))
            before = self._version()
            question = page.locator(".question")
            name = "predict" if question.count() else "step"
            sent_before = page.evaluate("() => window.__sent.length")
            if name == "predict":
                question.locator(".choices button").first.click()
            elif page.locator('button[data-post*="/step/"]').is_enabled():
                page.keyboard.press("n")
            else:
                break  # the scenario is over
            try:
                page.wait_for_function(
                    f"() => +document.querySelector('#state-version').dataset.version > {before}",
                    timeout=UPDATE_TIMEOUT_S * 1000,
                )
            except Exception:
                self.errors.add(
                    "missing update", f"Chromium {name}: version {before} did not move within {UPDATE_TIMEOUT_S:.0f} s"
                )
                next_at = time.monotonic() + self.rng.uniform(*self.pace)
                continue
            sent, seen = page.evaluate(f"() => [window.__sent.slice({sent_before}), window.__seen['{before + 1}']]")
            count += 1
            steps_done += name == "step"
            t0 = sent[0] if sent else None
            self.commands.append(
                {
                    "name": name,
                    "t0": t0,
                    "status": 204,
                    "frame_ms": (seen - t0) if (t0 and seen) else None,
                    "count": count,
                    "step": steps_done if name == "step" else None,
                }
            )
            next_at = time.monotonic() + self.rng.uniform(*self.pace)

    def wait_follow(self, t0: float) -> None:
        """The follow-me panel on this page, its frame's socket open on the facilitator's session."""
        try:
            self.page.wait_for_selector(".follow-panel iframe", timeout=30000)
            frame = self.page.frame_locator(".follow-panel iframe")
            frame.locator("#ws-status[data-state=open]").wait_for(timeout=30000)
            self.follow_ms = now_ms() - t0
        except Exception as exc:
            self.errors.add("follow-me failed", f"Chromium: {exc!r}")

    def wait_unfollow(self) -> None:
        try:
            self.page.wait_for_selector(".follow-panel iframe", state="hidden", timeout=30000)
            self.page.wait_for_selector("#ws-status[data-state=open]", timeout=30000)
        except Exception as exc:
            self.errors.add("follow-me failed", f"Chromium (off): {exc!r}")

    def wait_move(self, t0: float) -> None:
        """This page on the attendee's own session for the new item, its socket open."""
        old = self.sid
        try:
            self.page.wait_for_url(lambda url: "/s/" in url and f"/s/{old}/" not in url, timeout=30000)
            self.page.wait_for_selector("#ws-status[data-state=open]", timeout=30000)
            self.move_ms = now_ms() - t0
        except Exception as exc:
            self.errors.add("move failed", f"Chromium: {exc!r}")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ctx.close()


# ---------------------------------------------------------------------------------------------- server logs
def scan_logs(servers: Servers) -> dict:
    """Lines at WARNING or worse in the Daphne logs, nginx's error log and PostgreSQL's log; nginx's statuses and
    request times for the commands."""
    out: dict = {"daphne": [], "nginx_errors": [], "postgres": [], "statuses": {}, "command_request_ms": {}}
    for d in servers.daphnes:
        text = d.log.read_text(errors="replace") if d.log and d.log.exists() else ""
        for line in text.splitlines():
            if re.search(r"Traceback|ERROR|WARNING|CRITICAL|Exception|Error:", line):
                out["daphne"].append(f"{d.port}: {line.strip()[:240]}")
    err = servers.nginx.log
    if err and err.exists():
        out["nginx_errors"] = [
            line[:240]
            for line in err.read_text(errors="replace").splitlines()
            if re.search(r"\[(error|crit|alert|emerg|warn)\]", line)
        ]
    if servers.pg.log.exists():
        out["postgres"] = [
            line[:240]
            for line in servers.pg.log.read_text(errors="replace").splitlines()
            if re.search(r"\b(ERROR|FATAL|PANIC|WARNING)\b", line)
        ]
    access = servers.nginx.extra["access_log"]
    times: dict[str, list[float]] = {}
    statuses: Counter = Counter()
    if access.exists():
        pat = re.compile(r'"(\w+) (\S+) [^"]*" (\d{3}) .* time=([\d.]+)')
        for line in access.read_text(errors="replace").splitlines():
            m = pat.search(line)
            if not m:
                continue
            method, path, status, secs = m.group(1), m.group(2), m.group(3), float(m.group(4))
            kind = re.sub(r"/s/[^/]+/", "/s/<id>/", path.split("?")[0])
            kind = re.sub(r"^/w/[A-Za-z0-9]{6}/", "/w/<code>/", kind)
            kind = re.sub(r"^/ws/w/[^/]+/", "/ws/w/<room>/", kind)
            if kind.startswith("/static/"):
                kind = "/static/..."
            statuses[f"{method} {kind} {status}"] += 1
            if method == "POST" and kind in ("/s/<id>/step/", "/s/<id>/predict/"):
                times.setdefault(kind, []).append(secs * 1000)
            elif method == "GET" and kind in ("/w/<code>/", "/s/<id>/", "/w/<code>/board/", "/w/"):
                times.setdefault("GET " + kind, []).append(secs * 1000)
            elif method == "POST" and kind in ("/w/join/", "/w/create/"):
                times.setdefault("POST " + kind, []).append(secs * 1000)
    out["statuses"] = dict(sorted(statuses.items()))
    out["command_request_ms"] = {k: stats(v) for k, v in sorted(times.items())}
    return out


# ------------------------------------------------------------------------------------------------------ run
def run(args) -> dict:
    from playwright.sync_api import sync_playwright

    steps, questions = plan_of_scenario()
    commands_each = steps + len(questions)
    pace = tuple(float(x) for x in args.pace.split(","))
    errors = Errors()
    result: dict = {
        "attendees": args.attendees,
        "scenario": SCENARIO,
        "commands_per_attendee": commands_each,
        "pace_s": list(pace),
        "database": f"postgresql ({args.db})",
        "mode": "dev" if args.dev else "production",
        "daphne_processes": 2,
        "cores": os.cpu_count(),
        "load_average_before": loadavg(),
    }
    work = Path(tempfile.mkdtemp(prefix="bench-workshop-"))
    servers = None
    attendees: list[Attendee] = []
    t_setup = time.monotonic()
    try:
        servers = Servers(work, args.db, args.dev)
        base = servers.url
        result["setup_s"] = round(time.monotonic() - t_setup, 1)
        result["memory_idle"] = servers.memory()

        # The facilitator: a room over HTTP, the board in Chromium before anyone joins.
        fac = Client(base)
        fac.get("/w/new/")
        t0 = time.perf_counter()
        status, body, headers = fac.post(
            "/w/create/",
            [
                ("title", "Bench workshop"),
                ("scenario", SCENARIO),
                ("scenario", SECOND_ITEM),
                ("order-" + SCENARIO, "1"),
                ("order-" + SECOND_ITEM, "2"),
            ],
        )
        if status != 302:
            raise RuntimeError(f"POST /w/create/ -> {status}: {body[:300]}")
        result["create_ms"] = round((time.perf_counter() - t0) * 1000, 1)
        board_path = headers["Location"]
        code = re.search(r"/w/([A-Z0-9]{6})/board/", board_path).group(1)

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                board_ctx = browser.new_context(viewport={"width": 1600, "height": 1000}, locale="en-US")
                board_ctx.add_cookies(
                    [{"name": c.name, "value": c.value, "url": base, "httpOnly": True} for c in fac.jar]
                )
                board = board_ctx.new_page()
                board.goto(base + board_path, wait_until="load")
                board.wait_for_selector("#ws-status[data-state=open]", timeout=60000)

                # Everybody joins, spread over a few seconds as a room does.
                go = threading.Event()
                rng = random.Random(args.seed)
                attendees = [
                    Attendee(i + 1, base, code, steps, questions, pace, rng.randrange(2**32), errors, go)
                    for i in range(args.attendees - 1)
                ]
                t_join = time.monotonic()
                for a in attendees:
                    a.start_at = t_join + rng.uniform(0, args.join_window)
                chromium = BrowserAttendee(browser, base, code, commands_each, pace, rng.randrange(2**32), errors)
                pending = sorted(attendees, key=lambda a: a.start_at)
                chromium_at = t_join + args.join_window / 2
                joined_chromium = False
                while pending or not joined_chromium:
                    if not joined_chromium and time.monotonic() >= chromium_at:
                        chromium.join()
                        joined_chromium = True
                        continue
                    if pending and time.monotonic() >= pending[0].start_at:
                        pending.pop(0).thread.start()
                        continue
                    time.sleep(0.02)
                for a in attendees:
                    a.joined.wait(timeout=120)
                result["join_window_s"] = args.join_window
                result["joining_s"] = round(time.monotonic() - t_join, 1)
                result["join_ms"] = {
                    k: stats([a.join_ms[k] for a in attendees if a.join_ms])
                    for k in ("join_page", "join_post", "seat", "session_page", "sockets", "total")
                }
                result["join_ms"]["chromium_form_to_open_socket"] = round(chromium.join_ms, 1)
                time.sleep(1.0)
                # What the board opened before the joins shows now, live, without a reload.
                result["board_cards_live_after_joins"] = board.locator(".seat").count()
                t0 = time.perf_counter()
                board.reload(wait_until="load")
                board.wait_for_selector("#ws-status[data-state=open]", timeout=60000)
                result["board_reload_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                room_id = next(c.name[len("room_") :] for c in fac.jar if c.name.startswith("room_"))
                board_socket = BoardSocket(base, room_id, fac.cookie_header(), errors)
                initial = board.evaluate(OBSERVE_BOARD)
                result["board_cards_after_reload"] = len(initial)
                start_count = {
                    sid: int(m.group(1)) if (m := STEP_IN_TEXT.search(text)) else 0 for _id, sid, text in initial
                }
                result["memory_start"] = servers.memory()
                result["load_average_start"] = loadavg()

                # The exercise.
                cpu0, db0 = servers.cpu(), servers.db_stats()
                t_go = time.monotonic()
                go.set()
                chromium.work(stop_at=t_go + 240)
                for a in attendees:
                    a.done.wait(timeout=max(1.0, t_go + 300 - time.monotonic()))
                t_end = time.monotonic()
                cpu1 = servers.cpu()
                time.sleep(1.0)  # PostgreSQL's backends flush their statistics within a second
                db1 = servers.db_stats()
                result["load_average_end"] = loadavg()
                result["exercise_s"] = round(t_end - t_go, 1)

                # The board catches up (or not) with the last commands.
                expected = {
                    a.sid: max((c.get("step") or 0) for c in a.commands) for a in attendees if a.sid and a.commands
                }
                if chromium.sid and chromium.commands:
                    expected[chromium.sid] = max((c.get("step") or 0) for c in chromium.commands)
                deadline = time.monotonic() + 30  # late is measured; only what never comes counts as missing
                records = []
                while time.monotonic() < deadline:
                    records = board.evaluate("() => window.__board")
                    last = {}
                    for _id, sid, text, _t in records:
                        if m := STEP_IN_TEXT.search(text):
                            last[sid] = max(last.get(sid, 0), int(m.group(1)))
                    if all(last.get(sid, 0) - start_count.get(sid, 0) >= n for sid, n in expected.items()):
                        break
                    time.sleep(0.5)
                frames = board.evaluate("() => window.__boardFrames")
                board_cards_final = board.evaluate(
                    "() => Array.from(document.querySelectorAll('.seat .progress')).map(p => p.textContent.trim())"
                )
                board_socket.close()
                result["room_moves"] = room_moves(servers, board, fac, code, attendees, chromium, errors)
                chromium.close()
                board_ctx.close()
            finally:
                browser.close()

        # ---- figures
        board_at: dict[tuple[str, int], float] = {}
        for _id, sid, text, t in records:
            m = STEP_IN_TEXT.search(text)
            if m:
                board_at.setdefault((sid, int(m.group(1)) - start_count.get(sid, 0)), t)
        frame_at: dict[tuple[str, int], float] = {}
        for _id, sid, text, t in frames:
            m = STEP_IN_TEXT.search(text)
            if m:
                frame_at.setdefault((sid, int(m.group(1)) - start_count.get(sid, 0)), t)
        socket_at: dict[tuple[str, int], float] = {}
        for sid, text, t in board_socket.cards:
            m = STEP_IN_TEXT.search(text)
            if m:
                socket_at.setdefault((sid, int(m.group(1)) - start_count.get(sid, 0)), t)
        board_socket_latency = []
        socket_latency, posts, board_latency, board_frame_latency, sends = [], [], [], [], []
        per_kind: dict[str, list[float]] = {"step": [], "predict": []}
        board_missing = 0
        for who in [*attendees, chromium]:
            for c in who.commands:
                if c["t0"] is not None:
                    sends.append(c["t0"])
                if c["count"] is None:
                    continue
                if who is not chromium:
                    posts.append(c["post_ms"])
                    if c["frame_ms"] is not None:
                        socket_latency.append(c["frame_ms"])
                        per_kind[c["name"]].append(c["frame_ms"])
                if c.get("step") is None:
                    continue  # a prediction: the board's card shows steps
                t_board = board_at.get((who.sid, c["step"]))
                if t_board is None:
                    board_missing += 1
                    errors.add(
                        "board card not updated",
                        f"{who.name}: command #{c['count']} (step {c['step']}) never showed on the board",
                    )
                elif c["t0"] is not None:
                    board_latency.append(t_board - c["t0"])
                t_sock = socket_at.get((who.sid, c["step"]))
                if t_sock is not None and c["t0"] is not None:
                    board_socket_latency.append(t_sock - c["t0"])
                t_frame = frame_at.get((who.sid, c["step"]))
                if t_frame is not None and c["t0"] is not None:
                    board_frame_latency.append(t_frame - c["t0"])
        same, switched, same_bytes, switched_bytes = [], [], [], []
        for a in attendees:
            for c in a.commands[1:]:
                if c["frame_ms"] is not None:
                    (switched if c["switched"] else same).append(c["frame_ms"])
                    (switched_bytes if c["switched"] else same_bytes).append(c["frame_bytes"] or 0)
        chromium_latency = [c["frame_ms"] for c in chromium.commands if c["frame_ms"] is not None]
        finished = sum(
            1 for who in [*attendees, chromium] if sum(1 for c in who.commands if c["count"]) == commands_each
        )
        span_s = (max(sends) - min(sends)) / 1000 if len(sends) > 1 else 0.0
        ok_commands = sum(1 for who in [*attendees, chromium] for c in who.commands if c["count"])
        result.update(
            {
                "attendees_finished": finished,
                "commands_sent": len(sends),
                "commands_ok": ok_commands,
                "commands_per_s": round(ok_commands / span_s, 1) if span_s else None,
                "socket_attendees_event_to_frame": stats(socket_latency),
                "socket_attendees_by_command": {k: stats(v) for k, v in per_kind.items()},
                "socket_attendees_post": stats(posts),
                "process_switches": {
                    "share": round(len(switched) / max(1, len(same) + len(switched)), 2),
                    "same_process": stats(same),
                    "other_process": stats(switched),
                    "frame_bytes_same_p50": round(percentile(same_bytes, 0.5)) if same_bytes else None,
                    "frame_bytes_other_p50": round(percentile(switched_bytes, 0.5)) if switched_bytes else None,
                },
                "chromium_attendee_event_to_screen": stats(chromium_latency),
                "board_update": stats(board_latency),
                "board_frame_arrived": stats(board_frame_latency),
                "board_socket_viewer": stats(board_socket_latency),
                "board_socket_questions_frames": board_socket.questions,
                "board_swaps_recorded": len(records),
                "board_cards_at_the_end": sum(
                    1 for text in board_cards_final if (m := STEP_IN_TEXT.search(text)) and m.group(1) == m.group(2)
                ),
                "cpu_during_exercise": cpu_delta(cpu0, cpu1),
                "postgres_per_command": {
                    k: round((db1[k] - db0[k] - (1 if k == "sessions" else 0)) / max(1, ok_commands), 1)
                    for k in db0
                    if k in db1
                },
                "memory_end": servers.memory(),
            }
        )
        result["logs"] = scan_logs(servers)
        if args.dump:
            # Every command with its times (epoch ms), for a closer look: sent, on the attendee's screen, at the
            # board socket, in the board page.
            rows = []
            for who in [*attendees, chromium]:
                for c in who.commands:
                    key = (who.sid, c.get("step"))
                    rows.append(
                        {
                            "who": who.name,
                            "name": c["name"],
                            "count": c["count"],
                            "status": c["status"],
                            "t0": c["t0"],
                            "upstream": c.get("upstream"),
                            "switched": c.get("switched"),
                            "frame_bytes": c.get("frame_bytes"),
                            "post_ms": c.get("post_ms"),
                            "frame_ms": c["frame_ms"],
                            "board_socket": socket_at.get(key),
                            "board_frame": frame_at.get(key),
                            "board_swap": board_at.get(key),
                        }
                    )
            Path(args.dump).write_text(json.dumps({"result": result, "commands": rows}, indent=1))
    finally:
        for a in attendees:
            a.close()
        if servers is not None:
            servers.close()
        if args.keep:
            result["kept"] = str(work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    log_problems = (
        len(result.get("logs", {}).get("daphne", []))
        + len(result.get("logs", {}).get("nginx_errors", []))
        + len(result.get("logs", {}).get("postgres", []))
    )
    if log_problems:
        errors.add("server log lines", f"{log_problems} lines at WARNING or worse (see logs)")
    result["errors"] = errors.counts()
    result["error_examples"] = errors.examples()
    result["load_average_after"] = loadavg()
    sp95 = result["socket_attendees_event_to_frame"]["p95_ms"]
    cp95 = result["chromium_attendee_event_to_screen"]["p95_ms"]
    bp95 = result["board_update"]["p95_ms"]
    result["aims"] = {
        "no_errors": not result["errors"],
        "socket_attendee_p95_le_150ms": sp95 is not None and sp95 <= AIM_ATTENDEE_P95_MS,
        "chromium_attendee_p95_le_150ms": cp95 is not None and cp95 <= AIM_ATTENDEE_P95_MS,
        "board_p95_le_250ms": bp95 is not None and bp95 <= AIM_BOARD_P95_MS,
    }
    return result


def room_moves(servers, board, fac: Client, code: str, attendees: list, chromium, errors: Errors) -> dict:
    """The facilitator, on the board in Chromium, switches follow-me on, steps their own session while the room
    follows, switches it off, and moves the room to the agenda's next item: how long until every attendee's page
    shows it (the socket attendees do what rooms.js does, over HTTP and websockets; the Chromium attendee is a page),
    and the servers' CPU for it."""
    out: dict = {}
    ready = [a for a in attendees if a.sid and a.room_ws is not None]

    def phase(name: str, click, react, wait_chromium) -> None:
        marks = {id(a): len(a.room_frames) for a in ready}
        cpu0 = servers.cpu()
        t0 = now_ms()
        threads = [threading.Thread(target=react, args=(a, marks[id(a)], t0), daemon=True) for a in ready]
        for t in threads:
            t.start()
        click()
        if wait_chromium is not None:
            wait_chromium(t0)
        for t in threads:
            t.join(timeout=90)
        cpu1 = servers.cpu()
        out[name] = {"cpu": cpu_delta(cpu0, cpu1), "wall_ms": round(now_ms() - t0, 1)}

    def settle() -> None:
        board.wait_for_selector("#ws-status[data-state=open]", timeout=60000)
        time.sleep(2.0)

    # Follow-me on: the facilitator's session docked on every attendee's page.
    settle()
    phase(
        "follow",
        board.locator("#follow-toggle").click,
        lambda a, mark, t0: a.react_follow(mark, t0),
        chromium.wait_follow,
    )
    out["follow"].update(
        {
            "socket_attendees": stats([a.follow_ms for a in ready if a.follow_ms is not None]),
            "room_frame": stats([a.follow_frame_ms for a in ready if a.follow_frame_ms is not None]),
            "chromium_ms": round(chromium.follow_ms, 1) if chromium.follow_ms is not None else None,
            "followed": sum(1 for a in ready if a.follow_ms is not None),
        }
    )
    # The facilitator steps their own session: each step on every follower's panel.
    status, location, _body = fac.get_redirect(f"/w/{code}/")
    fsid = re.search(r"/s/([^/]+)/", location or "").group(1) if status == 302 else None
    lags: list[float] = []
    if fsid:
        _status, page = fac.get(f"/s/{fsid}/")
        version = int(VERSION.search(page).group(1))
        for _ in range(FOLLOW_STEPS):
            t0 = now_ms()
            status, body, _h = fac.post(f"/s/{fsid}/step/")
            if status != 204:
                errors.add(f"HTTP {status}", f"facilitator POST /s/{fsid}/step/: {body[:200]}")
                break
            version += 1
            deadline = time.monotonic() + UPDATE_TIMEOUT_S
            for a in ready:
                if a.follow_ws is None:
                    continue
                with a.cond:
                    while version not in a.follow_seen and time.monotonic() < deadline:
                        a.cond.wait(timeout=max(0.0, deadline - time.monotonic()))
                    seen = a.follow_seen.get(version)
                if seen is None:
                    errors.add("missing update", f"{a.name}: the facilitator's version {version} never came")
                else:
                    lags.append(seen - t0)
            time.sleep(1.0)
    out["follow_step"] = stats(lags)
    settle()
    phase(
        "unfollow",
        board.locator("#follow-toggle").click,
        lambda a, mark, t0: a.react_unfollow(mark),
        lambda t0: chromium.wait_unfollow(),
    )
    # The room moves on to the next item.
    settle()
    phase(
        "move",
        board.locator(".agenda button").first.click,
        lambda a, mark, t0: a.react_move(mark, 1, t0),
        chromium.wait_move,
    )
    out["move"].update(
        {
            "socket_attendees": stats([a.move_ms for a in ready if a.move_ms is not None]),
            "room_frame": stats([a.move_frame_ms for a in ready if a.move_frame_ms is not None]),
            "chromium_ms": round(chromium.move_ms, 1) if chromium.move_ms is not None else None,
            "moved": sum(1 for a in ready if a.move_ms is not None),
        }
    )
    return out


def fmt(s: dict) -> str:
    if not s.get("n"):
        return "no samples"
    return f"p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms (n={s['n']})"


def report(r: dict) -> None:
    ok = lambda b: "met" if b else "NOT met"  # noqa: E731
    aims = r["aims"]
    print(
        f"workshop: {r['attendees']} attendees ({r['attendees'] - 1} over websockets + 1 in Chromium) and the board, "
        f"{r['scenario']} ({r['commands_per_attendee']} commands each, one every {r['pace_s'][0]}-{r['pace_s'][1]} s), "
        f"{r['daphne_processes']} Daphne ({r['mode']} mode) behind nginx, {r['database']}, Redis"
    )
    print(f"  errors: {r['errors'] or 'none'}  [aim none: {ok(aims['no_errors'])}]")
    for kind, examples in r["error_examples"].items():
        for e in examples:
            print(f"    {kind}: {e}")
    print(
        f"  attendee event-to-screen, websocket attendees (POST sent -> frame with the new version): "
        f"{fmt(r['socket_attendees_event_to_frame'])}  [aim p95 <= 150 ms: {ok(aims['socket_attendee_p95_le_150ms'])}]"
    )
    for kind, s in r["socket_attendees_by_command"].items():
        print(f"      {kind}: {fmt(s)}")
    print(f"      the POST itself (to its 204): {fmt(r['socket_attendees_post'])}")
    ps = r["process_switches"]
    print(
        f"      a command served by the other Daphne than the session's previous one ({round(100 * ps['share'])}% of them): "
        f"{fmt(ps['other_process'])}, update frame p50 {ps['frame_bytes_other_p50']} bytes; by the same one: "
        f"{fmt(ps['same_process'])}, frame p50 {ps['frame_bytes_same_p50']} bytes"
    )
    print(
        f"  attendee event-to-screen, Chromium attendee (key press/click -> #state-version in the DOM): "
        f"{fmt(r['chromium_attendee_event_to_screen'])}  [aim p95 <= 150 ms: {ok(aims['chromium_attendee_p95_le_150ms'])}]"
    )
    print(
        f"  board update (attendee's command -> card swapped on the board in Chromium): {fmt(r['board_update'])}  "
        f"[aim p95 <= 250 ms: {ok(aims['board_p95_le_250ms'])}]"
    )
    print(f"      the card's message reaching the board page (before htmx swaps it): {fmt(r['board_frame_arrived'])}")
    print(
        f"      the same card at a second board viewer over a websocket (no browser): {fmt(r['board_socket_viewer'])}"
    )
    print(
        f"  commands: {r['commands_ok']} ok of {r['commands_sent']} sent, {r['commands_per_s']}/s sustained over "
        f"{r['exercise_s']} s; {r['attendees_finished']}/{r['attendees']} attendees reached the end"
    )
    j = r["join_ms"]
    print(
        f"  joining ({r['attendees'] - 1} over HTTP within {r['join_window_s']} s): total {fmt(j['total'])}; "
        f"seat (GET /w/<code>/) p95 {j['seat']['p95_ms']} ms, session page p95 {j['session_page']['p95_ms']} ms; "
        f"Chromium form -> open socket {j['chromium_form_to_open_socket']} ms"
    )
    print(
        f"  board: {r['board_cards_live_after_joins']}/{r['attendees']} cards shown live after the joins (opened before "
        f"them), {r['board_cards_after_reload']} after a reload ({r['board_reload_ms']} ms); at the end "
        f"{r['board_cards_at_the_end']} cards show the scenario's last step"
    )
    rm = r.get("room_moves") or {}
    for key, label, aim in (("follow", "follow-me on", 1000.0), ("move", "open for everyone (a move)", 1000.0)):
        m = rm.get(key)
        if not m:
            continue
        n = m.get("followed", m.get("moved"))
        c = m["cpu"]
        daphne_s = sum(c["daphne_s"])
        s = m["socket_attendees"]
        print(
            f"  {label}: click -> each socket attendee's page showing it {fmt(s)} ({n}/{r['attendees'] - 1}), "
            f"Chromium attendee {m['chromium_ms']} ms  [aim under {aim:.0f} ms: "
            f"{ok(s.get('p95_ms') is not None and s['p95_ms'] < aim and (m['chromium_ms'] or 1e9) < aim)}]"
        )
        print(
            f"      the room's frame reaching the pages: {fmt(m['room_frame'])}; Daphne CPU {c['daphne_s']} s "
            f"({round(1000 * daphne_s / max(1, r['attendees']), 1)} ms per attendee), PostgreSQL {c['postgres_s']} s, "
            f"machine {c['machine_busy_pct']}% busy over {m['wall_ms']} ms"
        )
    if rm.get("follow_step"):
        print(f"  follow-me: the facilitator's step -> every follower's panel: {fmt(rm['follow_step'])}")
    j = r["join_ms"]
    print(
        f"  a join (POST /w/join/ -> own session page and sockets open): p50 "
        f"{round(j['join_post']['p50_ms'] + j['seat']['p50_ms'] + j['session_page']['p50_ms'] + j['sockets']['p50_ms'], 1)}"
        f" ms (sum of the parts' p50s); total with the join page {fmt(j['total'])}  [aim under 500 ms: "
        f"{ok(j['total']['p95_ms'] is not None and j['total']['p95_ms'] < 500)}]"
    )
    for key, label in (("memory_idle", "idle"), ("memory_start", "start"), ("memory_end", "end")):
        m = r[key]
        d = ", ".join(f"{x['rss_mib']} MiB" for x in m["daphne"])
        pgm = m["postgres"] or {}
        print(
            f"  memory at {label:>5}: Daphne RSS {d}; PostgreSQL {pgm.get('processes')} processes RSS "
            f"{pgm.get('rss_mib')} MiB (PSS {pgm.get('pss_mib')} MiB); Redis RSS {m['redis']['rss_mib']} MiB"
        )
    print(f"  Daphne peak RSS (VmHWM): {', '.join(str(x['hwm_mib']) + ' MiB' for x in r['memory_end']['daphne'])}")
    c = r["cpu_during_exercise"]
    print(
        f"  CPU during the exercise: Daphne {c['daphne_s']} s, PostgreSQL {c['postgres_s']} s, Redis {c['redis_s']} s, "
        f"nginx {c['nginx_s']} s, this bench's Python {c['bench_client_s']} s; machine {c['machine_busy_pct']}% busy"
    )
    pc = r.get("postgres_per_command") or {}
    if pc:
        print(
            f"  PostgreSQL per command during the exercise: {pc.get('sessions')} connections opened, "
            f"{pc.get('xact_commit')} transactions, {pc.get('tup_returned')} rows returned, {pc.get('tup_fetched')} fetched"
        )
    logs = r.get("logs", {})
    for k, s in logs.get("command_request_ms", {}).items():
        print(f"  nginx request time {k}: {fmt(s)}")
    bad = {k: v for k, v in logs.get("statuses", {}).items() if not re.search(r" (200|204|302|101|304)$", k)}
    if bad:
        print(f"  nginx: other statuses: {bad}")
    for key in ("daphne", "nginx_errors", "postgres"):
        lines = logs.get(key, [])
        if lines:
            print(f"  {key} log: {len(lines)} lines at WARNING or worse, e.g.:")
            for line in list(dict.fromkeys(lines))[:6]:
                print(f"    {line}")
    print(
        f"  load average: before {r['load_average_before']}, at the start {r['load_average_start']}, "
        f"at the end {r['load_average_end']} ({r['cores']} cores)"
    )
    if r.get("kept"):
        print(f"  servers' files kept in {r['kept']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attendees", type=int, default=40, help="attendees in all, one of them in Chromium (default 40)")
    ap.add_argument(
        "--pace", default="1.0,2.5", help="seconds between an attendee's commands, min,max (default 1.0,2.5)"
    )
    ap.add_argument(
        "--join-window", type=float, default=10.0, help="attendees join within this many seconds (default 10)"
    )
    ap.add_argument(
        "--db",
        choices=("tcp", "socket"),
        default="tcp",
        help="DATABASE_URL over TCP with a password, as docker compose does (default), or the unix socket",
    )
    ap.add_argument(
        "--dev", action="store_true", help="Daphne with DEBUG off but not in production mode (no WhiteNoise)"
    )
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", action="store_true", help="keep the servers' logs and files (printed at the end)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--dump", metavar="FILE", help="also write every command's times to FILE (JSON)")
    args = ap.parse_args(argv)
    if args.attendees < 2:
        ap.error("--attendees: at least 2 (one of them is the Chromium page)")

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
