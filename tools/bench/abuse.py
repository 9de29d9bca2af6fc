"""Abuse: the attacks of issue 18 all at once against a deployment's parts, while a room of well-behaved attendees
works, and what it costs them.

    .venv/bin/python tools/bench/abuse.py [--attacks all|web|kafka] [--attendees 10] [--before 40] [--during 150]
                                          [--pace 1.0,2.0] [--json]

Starts a throw-away PostgreSQL (tests/pg.py), a redis-server, two Daphne processes in production mode (as `docker
compose` serves a room; PLAYGROUND_TRUSTED_PROXIES=127.0.0.1) and nginx in front of them, all on loopback ports of
their own, and stops them all at the end whatever happens. Every client says who it is with X-Forwarded-For (nginx
appends its own address; the servers believe the rest only from it): the attendees sit behind one NAT address, the
attacker has one of its own (all its attacks come from it: "one anonymous client", as the issue found it), and
one of them comes from the attendees' own address too.

- The attendees (`--attendees`, threads) join a room over the incident-in-full scenario (Kafka and its database)
  and step through it at a human pace (`--pace` seconds between commands), with an Idempotency-Key per command as
  the page sends, each command timed from its POST to the frame carrying the new version on the attendee's own
  websocket; at the scenario's end they reset and go on. First `--before` seconds alone, then `--during` seconds
  under attack, then each attendee's stored log is compared with what it did: nothing lost, nothing doubled.
- The attacks (each a thread, as fast as the answers come, bounded by this script's own pauses and caps):
  sql       hostile statements (printf's %.*c, string doubling, endless CTEs, 400 rows of 15 KB) as app.sql steps
            of sessions played from the editor, CHECK constraints and reconcile queries on /editor/check/, then
            every step of those sessions viewed at ?at=k, forked and compared (replays pay the SQL again);
  page      ten rows of 16 KB in a session's database, and its page fetched again and again;
  sessions  40 concurrent POST /new/ every 10 s;
  rooms     rooms created, joined under many names, their items opened and moved through;
  texts     63 KB scenario texts saved, each new;
  storage   back and reset in bursts on a free-play session;
  numbers   5,000-digit numbers where a scenario has numbers, a seed of 2^63 played, order-<id>=² on /w/create/;
  guess     wrong join codes, 60 at once, again and again; halfway, 25 from the attendees' own address, and then
            a late attendee joins with the right code from that address;
  names     look-alikes of the attendees' names ("ATTENDEE 01", full width, with an accent) joining their room;
  retries   the same command sent 5 times with one Idempotency-Key, at once;
  sockets   400 websockets from one address (through nginx, to both processes), held open.

The Kafka clients' attacks of issue 30 (`--attacks kafka`, or `all`, the default; the Daphnes then run with
PLAYGROUND_LISTEN=1): the attacker, from its address, makes four free-play sessions listen, two in each process (as
many as `listeners_per_client` lets one client hold), and points at them, from a process of its own
(tools/bench/abuse_kafka.py, whose docstring has the details): a produce flood of 100 KB random values, a 2 MB record
and a 5 MB request now and then; CreateTopics of 100,000 partitions and CreatePartitions to 100,000, then topics up to
the policy's bound; 20 raw sockets sending Metadata requests and never reading; a raw Fetch loop at fetch.wait.max.ms
0 re-reading a partition from its start; a reconnect storm (connect, ApiVersions, close); and a session of many
requests (a Fetch and a Metadata pipeline for the whole attack) in the first Daphne. Afterwards the attacker fetches
each of its sessions' pages at the last and the middle step, the first Daphne is killed with SIGKILL, and every
session the bench made (the attendees', the attacks', the session of many requests first) is opened in the second
one: its page, its page at the middle step, its websocket's snapshot, each timed to the first byte and to the end,
with the process's memory before and after.

Before the attendees come (with the web attacks), it measures how many wrong join codes a second the servers answer
(8 guessers, every guess from another address): what bounds guessing a code, since a right one is never refused.

Printed: the attendees' command-to-screen p50/p95 before and during (aim: p95 during within 2x of before), their
errors (aim: 0), the servers' peak memory (VmHWM; aim: under 500 MiB per Daphne), each attack's answers by status
(a 5xx anywhere is an error) or, for the Kafka clients, by Kafka's error names with the throttle times, bytes and
connections, the largest page the attacker got (aim: under 1 MB), websockets accepted and refused, every session's
opening in the second process after the kill (aim: under 2 s each), and what the attacks left in the database.
Nothing leaves loopback; every thread, socket and loop is capped.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "bench"))

from opening import open_over_http, timed_get, vm_kib  # noqa: E402

from playground.deploy import procs  # noqa: E402
from tests import pg, wsviewer  # noqa: E402
from tests.web.http import Browserish  # noqa: E402
from tests.wsviewer import ConnectionClosed  # noqa: E402

SCENARIO = "db-incident-in-full"
NAT = "10.0.0.1"  # the classroom's one address
FACILITATOR = "10.0.0.2"
ATTACKER = "10.66.0.1"
VERSION = re.compile(r'id="state-version" data-version="(\d+)"')
UPDATE_TIMEOUT_S = 10.0
MAX_DURING_S = 600.0
AIM_P95_RATIO = 2.0
AIM_PEAK_MIB = 500.0
AIM_PAGE_BYTES = 1_000_000
AIM_OPEN_S = 2.0
ATTACKS = ("all", "web", "kafka")
BIG = "9" * 5000
GUESSES_FOR_10_ROOMS = 31**6 / 11  # trying different codes in turn, the first of 10 rooms, on average
SOCKETS = 400  # from one address, through nginx to both processes: each process lets 150 of one client in


def now_ms() -> float:
    return time.time() * 1000.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "p50_ms": None, "p95_ms": None, "max_ms": None}
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 0.50), 1),
        "p95_ms": round(percentile(values, 0.95), 1),
        "max_ms": round(max(values), 1),
        "mean_ms": round(statistics.fmean(values), 1),
    }


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot: how busy the machine is, whoever keeps it busy."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Errors:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[tuple[str, str]] = []

    def add(self, kind: str, detail: str) -> None:
        with self.lock:
            self.items.append((kind, detail))

    def summary(self) -> dict:
        with self.lock:
            counts = Counter(k for k, _ in self.items)
            examples: dict[str, list[str]] = {}
            for kind, detail in self.items:
                if len(examples.setdefault(kind, [])) < 3:
                    examples[kind].append(detail)
        return {"counts": dict(counts), "examples": examples}


# ----------------------------------------------------------------------------------------------- the servers
class Servers:
    """PostgreSQL, Redis, two Daphne processes in production mode and nginx, on loopback; close() stops them."""

    def __init__(self, work: Path, listen: bool = False) -> None:
        self.stack = contextlib.ExitStack()
        try:
            self.pg = pg.start()
            self.stack.callback(self.pg.stop)
            self.redis = procs.start_redis(work / "redis")
            self.stack.callback(self.redis.stop)
            port = procs.free_port()
            self.env = procs.django_env(
                work / "unused.sqlite3",
                self.redis.extra["url"],
                DATABASE_URL=self.pg.url(),
                PLAYGROUND_TRUSTED_PROXIES="127.0.0.1",
                DJANGO_DEBUG="0",
                PLAYGROUND_PUBLIC_URL=f"http://127.0.0.1:{port}",
                PLAYGROUND_VAR_DIR=str(work / "var"),
                PLAYGROUND_RUN_STEP_MS="800",
                PLAYGROUND_LISTEN="1" if listen else "0",
            )
            procs.migrate(self.env)
            subprocess.run(
                [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"],
                env=self.env,
                check=True,
                cwd=ROOT,
            )
            self.daphnes = []
            for _ in range(2):
                d = procs.start_daphne(self.env, work / "daphne")
                self.stack.callback(d.stop)
                self.daphnes.append(d)
            self.nginx = procs.start_nginx(self.daphnes, work, port=port)
            self.stack.callback(self.nginx.stop)
        except BaseException:
            self.stack.close()
            raise
        host = urlsplit(self.url).hostname
        assert host == "127.0.0.1", f"loopback only, not {host}"

    @property
    def url(self) -> str:
        return self.nginx.url

    def memory(self) -> list[dict]:
        """Each Daphne's memory now (a killed one's is gone: zeros)."""
        return [
            {
                "pid": d.proc.pid,
                "rss_mib": round(m.get("VmRSS", 0) / 1024, 1),
                "peak_mib": round(m.get("VmHWM", 0) / 1024, 1),
            }
            for d in self.daphnes
            for m in [vm_kib(d.proc.pid)]
        ]

    def cpu(self) -> dict:
        return {
            "daphne": [cpu_s(d.proc.pid) for d in self.daphnes],
            "bench": sum(os.times()[:2]),
            "machine": machine_busy(),
        }

    def query(self, sql: str) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.pg.url(), autocommit=True, connect_timeout=10) as conn:
            return list(conn.execute(sql).fetchall())

    def request_time(self, top: int = 10) -> dict[str, list]:
        """What nginx measured: the routes that took the most time in all (seconds, requests), ids and codes
        folded; websockets left out (open for the whole run)."""
        total: Counter = Counter()
        count: Counter = Counter()
        pattern = re.compile(r'"(\w+) (\S+) HTTP[^"]*" (\d+) .* time=([\d.]+)')
        for line in Path(self.nginx.extra["access_log"]).read_text(errors="replace").splitlines():
            m = pattern.search(line)
            if not m or m.group(3) == "101":
                continue
            path = re.sub(r"/s/[^/]+/", "/s/ID/", m.group(2).split("?")[0]) + ("?at" if "?at=" in m.group(2) else "")
            key = f"{m.group(1)} {re.sub(r'/w/[A-Z0-9]{6}/', '/w/CODE/', path)} {m.group(3)}"
            total[key] += float(m.group(4))
            count[key] += 1
        return {k: [round(v, 1), count[k]] for k, v in total.most_common(top)}

    def log_problems(self) -> list[str]:
        out = []
        for d in self.daphnes:
            if d.log and d.log.exists():
                for line in d.log.read_text(errors="replace").splitlines():
                    if "Traceback" in line or "Internal Server Error" in line or " 500 " in line:
                        out.append(f"{d.port}: {line.strip()[:200]}")
        return out

    def log_notes(self) -> dict[str, int]:
        """What the servers said of the sessions' listeners and of oversize updates (warnings), counted by process,
        the session's id folded."""
        notes: Counter = Counter()
        for d in self.daphnes:
            if d.log and d.log.exists():
                for line in d.log.read_text(errors="replace").splitlines():
                    if line.startswith(("session ", "a fragment of ")):
                        folded = re.sub(r"^session \S+:", "session:", line.strip())
                        notes[f":{d.port} {folded[:160]}"] += 1
        return dict(notes)

    def close(self) -> None:
        self.stack.close()


class Client(Browserish):
    """tests/web/http.py's client as one address (X-Forwarded-For), plus the redirect's Location of a GET."""

    def __init__(self, base: str, address: str) -> None:
        super().__init__(base, {"X-Forwarded-For": address})
        self.address = address

    def get_redirect(self, path: str) -> tuple[int, str | None]:
        try:
            with self.opener.open(urllib.request.Request(self.base + path, headers=self.headers), timeout=30) as r:
                r.read()
                return r.status, None
        except urllib.error.HTTPError as e:
            e.read()
            return e.code, e.headers.get("Location")

    def cookie_header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


def open_socket(base: str, path: str, address: str, cookie: str = "", timeout: float = 30):
    headers = {"X-Forwarded-For": address, **({"Cookie": cookie} if cookie else {})}
    return wsviewer.open_socket("ws" + base.removeprefix("http") + path, base, headers, timeout)


# ----------------------------------------------------------------------------------------------- the attendees
class Attendee:
    """Joins the room from the classroom's address, then steps through the scenario at a human pace (reset at its
    end), timing each command from its POST to its version's frame on the attendee's own websocket."""

    def __init__(self, index: int, base: str, code: str, pace: tuple[float, float], errors: Errors) -> None:
        self.index, self.base, self.code, self.pace, self.errors = index, base, code, pace, errors
        self.name = f"Attendee {index:02d}"
        self.rng = random.Random(index)
        self.client = Client(base, NAT)
        self.sid = ""
        self.expected = 0  # commands the stored log should hold: every step answered 204, back to 0 at a reset
        self.records: list[tuple[float, float | None]] = []  # (sent at, ms to the screen or None)
        self.cond = threading.Condition()
        self.seen: dict[int, float] = {}
        self.version = -1
        self.ws = None
        self.closing = False

    def join(self) -> None:
        c = self.client
        status, body, headers = c.post("/w/join/", {"code": self.code, "name": self.name})
        if status != 302:
            raise RuntimeError(f"POST /w/join/ -> {status}: {body[:200]}")
        status, location = c.get_redirect(headers["Location"])
        if status != 302 or not location:
            raise RuntimeError(f"GET {headers['Location']} -> {status}")
        self.sid = re.search(r"/s/([^/]+)/", location).group(1)
        status, _page = c.get(f"/s/{self.sid}/")
        if status != 200:
            raise RuntimeError(f"GET /s/{self.sid}/ -> {status}")
        self.ws = open_socket(self.base, f"/ws/s/{self.sid}/?lang=en", NAT, c.cookie_header())
        for m in VERSION.finditer(self.ws.recv(timeout=30)):
            self.version = max(self.version, int(m.group(1)))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            while True:
                frame = self.ws.recv(timeout=None)
                t = now_ms()
                with self.cond:
                    for m in VERSION.finditer(frame):
                        v = int(m.group(1))
                        self.seen.setdefault(v, t)
                        self.version = max(self.version, v)
                    self.cond.notify_all()
        except (ConnectionClosed, OSError) as exc:
            if not self.closing:
                self.errors.add("websocket closed", f"{self.name}: {exc!r}")

    def work(self, stop_at: float, steps: int) -> None:
        while time.monotonic() < stop_at:
            time.sleep(self.rng.uniform(*self.pace))
            name = "reset" if self.expected >= steps else "step"
            with self.cond:
                before = self.version
            t0 = now_ms()
            status, body, _h = self.client.post(
                f"/s/{self.sid}/{name}/", headers={"Idempotency-Key": secrets.token_hex(16)}
            )
            if status != 204:
                self.errors.add(f"HTTP {status}", f"{self.name} {name}: {body.strip()[:200]}")
                self.records.append((t0, None))
                continue
            self.expected = 0 if name == "reset" else self.expected + 1
            deadline = time.monotonic() + UPDATE_TIMEOUT_S
            with self.cond:
                while not any(v > before for v in self.seen) and time.monotonic() < deadline:
                    self.cond.wait(timeout=max(0.0, deadline - time.monotonic()))
                arrived = min((t for v, t in self.seen.items() if v > before), default=None)
            if arrived is None:
                self.errors.add("missing update", f"{self.name} {name}: nothing after version {before}")
            self.records.append((t0, None if arrived is None else arrived - t0))

    def check_log(self) -> None:
        status, body = self.client.get(f"/s/{self.sid}/log.json")
        if status != 200:
            self.errors.add("log", f"{self.name}: log.json -> {status}")
            return
        stored = len(json.loads(body)["commands"])
        if stored != self.expected:
            kind = "doubled" if stored > self.expected else "lost"
            self.errors.add(f"commands {kind}", f"{self.name}: stored {stored}, did {self.expected}")

    def close(self) -> None:
        self.closing = True
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self.ws.close()


# --------------------------------------------------------------------------------------------------- attacks
HOSTILE = [
    "SELECT length(printf('%.*c', 999999999, 'x'))",
    "WITH RECURSIVE r(x, n) AS (SELECT 'x', 0 UNION ALL SELECT x || x, n + 1 FROM r WHERE n < 27) SELECT max(length(x)) FROM r",
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r",
    "INSERT INTO blobs SELECT i, printf('%.*c', 15000, 'x') FROM (WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 400) SELECT i FROM r)",
    "SELECT fts3_tokenizer('simple')",
]


def scenario_text(
    title: str, columns: str = "id integer primary key, v text", steps: list[str] = (), extra: str = ""
) -> str:
    lines = "\n".join(f'  - app.sql: "{s}"' for s in steps)
    return f"""format: 1
id: abuse
title: {title}
cluster:
  topics:
    orders: {{partitions: 1}}
actors:
  A: {{producer: {{transactional.id: t}}}}
database:
  tables:
    blobs:
      columns: "{columns}"
{extra}
steps:
  - A.init_transactions
{lines}
"""


class Attacks:
    def __init__(self, base: str, stop_at: float, errors: Errors, room_code: str) -> None:
        self.base, self.stop_at, self.errors, self.room_code = base, stop_at, errors, room_code
        self.statuses: dict[str, Counter] = {}
        self.lock = threading.Lock()
        self.largest_page = 0
        self.sockets = {"accepted": 0, "refused": 0}
        self.late_join = None
        self.open_sockets: list = []

    def running(self) -> bool:
        return time.monotonic() < self.stop_at

    def note(self, attack: str, status: int, what: str = "") -> None:
        with self.lock:
            self.statuses.setdefault(attack, Counter())[status] += 1
        if status >= 500:
            self.errors.add("attacker got a 5xx", f"{attack} {what}: {status}")

    def pause(self, s: float) -> None:
        time.sleep(min(s, max(0.0, self.stop_at - time.monotonic())))

    def post(self, attack: str, c: Client, path: str, data: dict | None = None, **kw) -> tuple[int, str, dict]:
        status, body, headers = c.post(path, data, **kw)
        self.note(attack, status, path)
        return status, body, headers

    def get(self, attack: str, c: Client, path: str) -> tuple[int, str]:
        status, body = c.get(path)
        self.note(attack, status, path)
        return status, body

    # ---- the attacks
    def sql(self) -> None:
        c = Client(self.base, ATTACKER)
        check = scenario_text(
            "check",
            "id integer primary key, v text CHECK (length(printf('%.*c', 999999999, 'x')) > 0)",
            extra="      rows: [[1, a]]",
        )
        reconcile = scenario_text(
            "reconcile",
            extra='  reconcile:\n    sql: "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"',
        )
        while self.running():
            self.post("sql", c, "/editor/check/", {"text": check})
            self.post("sql", c, "/editor/check/", {"text": reconcile})
            text = scenario_text(f"sql {secrets.token_hex(4)}", steps=HOSTILE * 3)
            status, _b, headers = self.post("sql", c, "/editor/play/", {"text": text})
            if status != 302:
                self.pause(2)
                continue
            sid = re.search(r"/s/([^/]+)/", headers["Location"]).group(1)
            for _ in range(len(HOSTILE) * 3 + 1):
                if self.post("sql", c, f"/s/{sid}/step/")[0] != 204 or not self.running():
                    break
            for k in range(0, len(HOSTILE) * 3 + 2, 3):
                if not self.running():
                    break
                self.get("sql", c, f"/s/{sid}/?at={k}")
            self.post("sql", c, f"/s/{sid}/fork/", {"at": "5"})
            self.get("sql", c, f"/s/{sid}/compare/?at=8")

    def prepare(self) -> None:
        """The sessions the attacks work on, made first (the attacker's sessions a minute are few, and the floods
        below spend them): one with ten rows of 16 KB in its database, and three of free play."""
        c = Client(self.base, ATTACKER)
        steps = [f"INSERT INTO blobs VALUES ({i}, printf('%.*c', 16000, 'x'))" for i in range(10)]
        status, body, headers = self.post("page", c, "/editor/play/", {"text": scenario_text("page", steps=steps)})
        assert status == 302, (status, body[:200])
        sid = re.search(r"/s/([^/]+)/", headers["Location"]).group(1)
        for _ in range(len(steps) + 1):
            self.post("page", c, f"/s/{sid}/step/")
        self.prepared = {"page": (c, sid)}
        for name in ("storage", "retries", "sockets"):
            own = Client(self.base, ATTACKER)
            self.prepared[name] = (own, own.new_session(""))

    def page(self) -> None:
        c, sid = self.prepared["page"]
        while self.running():
            _status, body = self.get("page", c, f"/s/{sid}/")
            self.largest_page = max(self.largest_page, len(body.encode()))
            self.pause(0.5)

    def sessions(self) -> None:
        c = Client(self.base, ATTACKER)  # one CSRF cookie for all: an attacker fetches no page it needs not
        c.csrf()
        while self.running():
            with ThreadPoolExecutor(40) as pool:
                for status, _b, _h in pool.map(lambda _i: c.post("/new/", {"scenario": ""}), range(40)):
                    self.note("sessions", status)
            self.pause(10)

    def rooms(self) -> None:
        c = Client(self.base, ATTACKER)
        while self.running():
            status, _b, headers = self.post(
                "rooms",
                c,
                "/w/create/",
                [("title", "x"), ("scenario", "zombie-fencing"), ("scenario", "commit-and-abort")],
            )
            if status != 302:
                self.pause(3)
                continue
            code = re.search(r"/w/([^/]+)/board/", headers["Location"]).group(1)
            for i in range(30):
                if not self.running():
                    return
                a = Client(self.base, ATTACKER)
                a.jar.set_cookie(next(k for k in c.jar if k.name == "csrftoken"))  # no GET / for each bot
                if self.post("rooms", a, "/w/join/", {"code": code, "name": f"bot {i}"})[0] == 302:
                    self.note("rooms", a.get_redirect(f"/w/{code}/")[0], "seat")
                if i % 10 == 9:
                    self.post("rooms", c, f"/w/{code}/move/", {"item": str((i // 10) % 2)})
                    self.post("rooms", c, f"/w/{code}/follow/", {"on": "1"})

    def texts(self) -> None:
        c = Client(self.base, ATTACKER)
        padding = "#" + "x" * 120 + "\n"
        while self.running():
            text = scenario_text(f"text {secrets.token_hex(6)}") + padding * 500  # some 63 KB
            self.post("texts", c, "/editor/save/", {"text": text})
            self.pause(0.2)

    def storage(self) -> None:
        c, sid = self.prepared["storage"]
        self.note("storage", 302)
        while self.running():
            for _ in range(30):
                self.post("storage", c, f"/s/{sid}/action/", {"actor": "rc", "action": "poll"})
            for _ in range(5):
                self.post("storage", c, f"/s/{sid}/back/")
            self.post("storage", c, f"/s/{sid}/reset/")
            self.pause(3)

    def numbers(self) -> None:
        c = Client(self.base, ATTACKER)
        base = scenario_text("numbers")
        texts = [
            base.replace("partitions: 1", f"partitions: {BIG}"),
            base.replace("format: 1", f"format: 1\nseed: {BIG}"),
            base + f"  - clock.advance: {BIG}s\n",
            base + f"  - A.produce: {{topic: orders, partition: {BIG}, value: x}}\n",
        ]
        while self.running():
            for t in texts:
                self.post("numbers", c, "/editor/check/", {"text": t})
            self.post("numbers", c, "/editor/play/", {"text": base.replace("format: 1", f"format: 1\nseed: {2**63}")})
            self.post(
                "numbers", c, "/w/create/", {"title": "x", "scenario": "zombie-fencing", "order-zombie-fencing": "²"}
            )
            self.get("numbers", c, "/s/nope/?at=%C2%B2")
            self.pause(1)

    def guess(self) -> None:
        """Wrong join codes, 60 at once, again and again, from one address; halfway, 25 of them from the
        classroom's own address (past its limit), and then a late attendee joins from there with the right code."""
        late_at = time.monotonic() + (self.stop_at - time.monotonic()) / 2
        c = Client(self.base, ATTACKER)
        c.csrf()
        while self.running():
            with ThreadPoolExecutor(20) as pool:
                for status, _b, _h in pool.map(
                    lambda _i: c.post("/w/join/", {"code": "Z" + secrets.token_hex(3).upper()[:5], "name": "x"}),
                    range(60),
                ):
                    self.note("guess", status)
            if self.late_join is None and time.monotonic() > late_at:
                nat = Client(self.base, NAT)
                for _ in range(25):
                    self.post("guess", nat, "/w/join/", {"code": "Y" + secrets.token_hex(3).upper()[:5], "name": "x"})
                late = Client(self.base, NAT)
                self.late_join = late.post("/w/join/", {"code": self.room_code, "name": "Late attendee"})[0]
                if self.late_join != 302:
                    self.errors.add("late attendee refused", f"POST /w/join/ -> {self.late_join}")
            self.pause(2)

    def names(self) -> None:
        c = Client(self.base, ATTACKER)
        alikes = ["ATTENDEE 00", "ａｔｔｅｎｄｅｅ 00", "Atte\u0301ndee 00", " attendee  00 "]
        for name in alikes:
            self.post("names", c, "/w/join/", {"code": self.room_code, "name": name})

    def retries(self) -> None:
        c, sid = self.prepared["retries"]
        c.csrf()
        while self.running():
            key = secrets.token_hex(8)
            with ThreadPoolExecutor(5) as pool:
                codes = list(
                    pool.map(
                        lambda _i, key=key: c.post(
                            f"/s/{sid}/add-producer/", {"mode": "plain"}, headers={"Idempotency-Key": key}
                        )[0],
                        range(5),
                    )
                )
            for code in codes:
                self.note("retries", code)
            status, body = c.get(f"/s/{sid}/log.json")
            adds = len(json.loads(body)["commands"]) if status == 200 else -1
            if adds > 12:
                break  # the session's producers are full (12): a later add is refused, rightly
            self.pause(2)
        status, body = c.get(f"/s/{sid}/log.json")
        stored = len(json.loads(body)["commands"])
        sent = self.statuses["retries"][204] // 5
        if stored != min(sent, 12):
            self.errors.add("retried command stored twice", f"sent {sent} keys, stored {stored}")

    def sockets_(self) -> None:
        _c, sid = self.prepared["sockets"]
        for _ in range(SOCKETS):
            if not self.running():
                break
            try:
                ws = open_socket(self.base, f"/ws/s/{sid}/", ATTACKER, timeout=10)
                self.open_sockets.append(ws)
                self.sockets["accepted"] += 1
            except Exception:
                self.sockets["refused"] += 1
        while self.running():
            self.pause(1)
        for ws in self.open_sockets:
            with contextlib.suppress(Exception):
                ws.close()

    def all(self) -> list[threading.Thread]:
        out = []
        for name in (
            "sql",
            "page",
            "sessions",
            "rooms",
            "texts",
            "storage",
            "numbers",
            "guess",
            "names",
            "retries",
            "sockets_",
        ):
            fn = getattr(self, name)

            def run(fn=fn, name=name):
                try:
                    fn()
                except Exception as exc:
                    self.errors.add("attack thread failed", f"{name}: {exc!r}")

            t = threading.Thread(target=run, name=f"attack-{name}", daemon=True)
            t.start()
            out.append(t)
        return out


# --------------------------------------------------------------------------------------------------- the run
def guess_rate(base: str, seconds: float = 15.0, threads: int = 8) -> float:
    """Wrong join codes a second the servers answer (a 404 or a 429 tells a guesser the same: wrong), from as many
    addresses as guesses: what bounds guessing, since a right code is never refused (README.md, "Limits")."""
    stop_at = time.monotonic() + seconds
    answered = [0] * threads

    def guesser(i: int) -> None:
        c = Client(base, f"10.77.{i}.1")
        c.csrf()
        while time.monotonic() < stop_at:
            c.headers["X-Forwarded-For"] = f"10.77.{i}.{secrets.randbelow(250) + 1}"
            status, _b, _h = c.post("/w/join/", {"code": "X" + secrets.token_hex(3).upper()[:5], "name": "x"})
            if status in (404, 429):
                answered[i] += 1

    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(guesser, range(threads)))
    return sum(answered) / (time.monotonic() - started)


def scenario_steps() -> int:
    """The attendees' scenario's steps, read with the app's loader: a "step" past the last one is refused."""
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
    import django

    django.setup()
    from playground.scenario import library

    scenario = library.get(SCENARIO)
    assert scenario is not None, SCENARIO
    return len(scenario.steps)


class KafkaAttacker:
    """The Kafka clients' attacks (tools/bench/abuse_kafka.py) as a process of its own, until `end_epoch_s`."""

    def __init__(self, servers: Servers, work: Path, end_epoch_s: float) -> None:
        self.stderr = work / "abuse_kafka.err"
        argv = [sys.executable, str(ROOT / "tools" / "bench" / "abuse_kafka.py"), "--nginx", servers.url]
        for d in servers.daphnes:
            argv += ["--daphne", d.url]
        argv += ["--address", ATTACKER, "--end", str(end_epoch_s)]
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=self.stderr.open("w"), text=True, cwd=ROOT, start_new_session=True
        )

    def _failed(self, what: str) -> RuntimeError:
        tail = self.stderr.read_text(errors="replace")[-2000:] if self.stderr.exists() else ""
        return RuntimeError(f"the Kafka attacker {what}: {tail}")

    def ready(self) -> dict:
        """Its sessions, once they listen."""
        line = self.proc.stdout.readline()
        if not line.startswith("ready "):
            raise self._failed(f"did not start ({line.strip()[:200]!r})")
        return json.loads(line.removeprefix("ready "))

    def result(self, timeout_s: float) -> dict:
        try:
            out, _err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise self._failed(f"did not finish within {timeout_s:.0f} s") from None
        lines = out.strip().splitlines()
        if self.proc.returncode != 0 or not lines:
            raise self._failed(f"exited with {self.proc.returncode}")
        return json.loads(lines[-1])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def log_json_of(servers: Servers, kafka: dict) -> dict:
    """GET log.json of the session of many requests from the process that holds it (every request spelled out):
    its size and time, and that process's memory after it (taken after the attack's figures, so as not to mix)."""
    target = kafka["sessions"]["log"]
    owner = next(d for d in servers.daphnes if d.url == target["owner"])
    got = timed_get(owner.url, f"/s/{target['sid']}/log.json", {"X-Forwarded-For": ATTACKER})
    got.pop("body", None)
    got["peak_mib_after"] = round(vm_kib(owner.proc.pid).get("VmHWM", 0) / 1024, 1)
    return got


def open_after_kill(servers: Servers, sessions: list[tuple[str, str]]) -> dict:
    """Kill the first Daphne (SIGKILL: the one that held the session of many requests) and open every session in the
    second: each one's page, its middle step and its websocket's snapshot, timed, with the process's memory."""
    servers.daphnes[0].kill()
    other = servers.daphnes[1]
    opened = []
    for label, sid in sessions:
        o = open_over_http(other, sid, None, {"X-Forwarded-For": ATTACKER})
        slowest = max((o[k].get("total_s") or 0.0) for k in ("page", "middle", "ws"))
        failed = [k for k in ("page", "middle", "ws") if o[k].get("status") not in (200, 101)]
        opened.append({"session": label, "sid": sid, "slowest_s": slowest, "failed": failed, **o})
    return {
        "process": other.proc.pid,
        "opened": opened,
        "slowest_s": max((o["slowest_s"] for o in opened), default=None),
        "peak_mib": max((o["hwm_after_mib"] for o in opened), default=None),
    }


def attack_sessions(attendees: list[Attendee], attacks: Attacks, kafka: dict | None) -> list[tuple[str, str]]:
    """Every session the bench made, the session of many requests first."""
    out: list[tuple[str, str]] = []
    if kafka:
        order = sorted(kafka["sessions"].values(), key=lambda t: t["name"] != "log")
        out += [(f"kafka {t['name']}", t["sid"]) for t in order]
    out += [(f"web {name}", sid) for name, (_c, sid) in getattr(attacks, "prepared", {}).items()]
    out += [(a.name, a.sid) for a in attendees if a.sid]
    return out


def run(args) -> dict:
    import tempfile

    web, kafka = args.attacks in ("all", "web"), args.attacks in ("all", "kafka")
    pace = tuple(float(x) for x in args.pace.split(","))
    during = min(args.during, MAX_DURING_S)
    work = Path(tempfile.mkdtemp(prefix="abuse-"))
    errors = Errors()
    servers = Servers(work, listen=kafka)
    attacker: KafkaAttacker | None = None
    try:
        fac = Client(servers.url, FACILITATOR)
        status, body, headers = fac.post("/w/create/", {"title": "Room", "scenario": SCENARIO})
        assert status == 302, (status, body[:300])
        code = re.search(r"/w/([^/]+)/board/", headers["Location"]).group(1)
        steps = scenario_steps()
        rate = guess_rate(servers.url) if web else None
        attendees = [Attendee(i, servers.url, code, pace, errors) for i in range(args.attendees)]
        for a in attendees:
            a.join()
        memory_start = servers.memory()
        t_before = time.monotonic()
        stop_before = t_before + args.before
        threads = [threading.Thread(target=a.work, args=(stop_before + during, steps), daemon=True) for a in attendees]
        cpu_0 = servers.cpu()
        for t in threads:
            t.start()
        time.sleep(max(0.0, stop_before - time.monotonic()))
        attack_started_ms = now_ms()
        load_before = loadavg()
        cpu_1 = servers.cpu()
        attacks = Attacks(servers.url, time.monotonic() + during, errors, code)
        attack_threads: list[threading.Thread] = []
        if kafka:  # its four sessions first: the web attacks spend the attacker's sessions a minute
            attacker = KafkaAttacker(servers, work, time.time() + max(0.0, stop_before + during - time.monotonic()))
            attacker.ready()
        if web:
            attacks.prepare()
            attack_threads = attacks.all()
        peaks: list[list[dict]] = []
        while any(t.is_alive() for t in threads):
            peaks.append(servers.memory())
            time.sleep(2)
        load_during = loadavg()
        cpu_2 = servers.cpu()
        for t in attack_threads:
            t.join(timeout=60)
        kafka_result = attacker.result(timeout_s=600) if attacker is not None else None
        for a in attendees:
            a.check_log()
            a.close()
        before = [ms for a in attendees for t0, ms in a.records if ms is not None and t0 < attack_started_ms]
        under = [ms for a in attendees for t0, ms in a.records if ms is not None and t0 >= attack_started_ms]
        memory_end = servers.memory()
        largest = {"bytes": attacks.largest_page, "what": "web page attack"}
        opened = log_json = None
        if kafka_result is not None:
            for failure in kafka_result["failures"]:
                errors.add("kafka attack failed", failure)
            page = kafka_result["largest_page"]
            if page and page.get("bytes", 0) > largest["bytes"]:
                largest = {"bytes": page["bytes"], "what": f"kafka {page['session']} at {page['at']}"}
            log_json = log_json_of(servers, kafka_result)
            opened = open_after_kill(servers, attack_sessions(attendees, attacks, kafka_result))
            for o in opened["opened"]:
                if o["failed"]:
                    errors.add("opening failed", f"{o['session']} {o['sid']}: {o['failed']}")
        left = dict(
            zip(
                ("sessions", "texts", "rooms", "attendees", "commands", "counters", "answers"),
                servers.query(
                    "SELECT (SELECT count(*) FROM playground_session), (SELECT count(*) FROM playground_scenariotext), "
                    "(SELECT count(*) FROM playground_workshop), (SELECT count(*) FROM playground_attendee), "
                    "(SELECT count(*) FROM playground_command), (SELECT count(*) FROM playground_counter), "
                    "(SELECT count(*) FROM playground_commandanswer)"
                )[0],
            )
        )
        for line in servers.log_problems():
            errors.add("server log", line)
        log_notes = servers.log_notes()
        request_time = servers.request_time()
        p95_before, p95_during = stats(before)["p95_ms"], stats(under)["p95_ms"]
        peak_mib = max([m["peak_mib"] for m in memory_end] + ([opened["peak_mib"] or 0] if opened else []))
        well_behaved = {
            k: v
            for k, v in errors.summary()["counts"].items()
            if k
            in (
                "websocket closed",
                "missing update",
                "commands lost",
                "commands doubled",
                "log",
                "late attendee refused",
            )
            or k.startswith("HTTP ")
        }
        aims = {
            "p95_within_2x": bool(p95_before and p95_during and p95_during <= AIM_P95_RATIO * p95_before),
            "peak_under_500_mib": peak_mib < AIM_PEAK_MIB,
            "no_errors_for_the_well_behaved": not well_behaved,
            "no_page_over_1_mb": largest["bytes"] < AIM_PAGE_BYTES,
        }
        if opened is not None:
            aims["every_session_opens_under_2_s"] = bool(opened["slowest_s"] is not None) and all(
                o["slowest_s"] < AIM_OPEN_S and not o["failed"] for o in opened["opened"]
            )
        return {
            "attacks_run": args.attacks,
            "attendees": args.attendees,
            "before_s": args.before,
            "during_s": during,
            "attendee_before": stats(before),
            "attendee_during": stats(under),
            "p95_ratio": round(p95_during / p95_before, 2) if p95_before and p95_during else None,
            "well_behaved_errors": well_behaved,
            "errors": errors.summary(),
            "memory_start": memory_start,
            "memory_end": memory_end,
            "peak_mib": peak_mib,
            "attacks": {k: dict(sorted(v.items())) for k, v in attacks.statuses.items()},
            "largest_page": largest,
            "kafka": kafka_result,
            "opened_after_kill": opened,
            "log_json": log_json,
            "server_notes": log_notes,
            "wrong_codes_per_s": round(rate, 1) if rate is not None else None,
            "guess_days_10_rooms": round(GUESSES_FOR_10_ROOMS / rate / 86400, 1) if rate else None,
            "sockets": attacks.sockets,
            "late_attendee": attacks.late_join,
            "left_in_database": left,
            "request_time_s": request_time,
            "load": {"before": load_before, "during": load_during},
            "cpu": {"before": cpu_share(cpu_0, cpu_1), "during": cpu_share(cpu_1, cpu_2)},
            "aims": aims,
        }
    finally:
        if attacker is not None:
            attacker.stop()
        servers.close()
        if args.keep:
            print(f"(the servers' files: {work})", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def cpu_share(a: dict, b: dict) -> dict:
    """Seconds of CPU between two readings, and the share of the machine's two cores each took."""
    wall = (b["machine"][1] - a["machine"][1]) / os.sysconf("SC_CLK_TCK")  # jiffies of every CPU together
    return {
        "daphne_s": [round(y - x, 1) for x, y in zip(a["daphne"], b["daphne"])],
        "bench_client_s": round(b["bench"] - a["bench"], 1),
        "machine_busy_pct": round(
            100 * (b["machine"][0] - a["machine"][0]) / max(1, b["machine"][1] - a["machine"][1]), 1
        ),
        "cpu_s_available": round(wall, 1),
    }


def report(r: dict) -> None:
    print(
        f"{r['attendees']} attendees, {r['before_s']} s alone, then {r['during_s']} s under every attack at once "
        f"(--attacks {r['attacks_run']})"
    )
    for phase in ("before", "during"):
        s = r[f"attendee_{phase}"]
        print(
            f"  attendee command to screen, {phase:6}: n={s['n']} p50 {s['p50_ms']} ms, p95 {s['p95_ms']} ms, max {s['max_ms']} ms"
        )
    print(f"  p95 during / before: {r['p95_ratio']}x (aim <= {AIM_P95_RATIO}x); load {r['load']}")
    for phase in ("before", "during"):
        c = r["cpu"][phase]
        print(
            f"  CPU {phase:6}: Daphnes {c['daphne_s']} s, this bench {c['bench_client_s']} s, of {c['cpu_s_available']} s of "
            f"the machine's CPUs, which were {c['machine_busy_pct']}% busy (whoever kept them busy)"
        )
    print(
        f"  errors of the well-behaved: {r['well_behaved_errors'] or 'none'}; the late attendee behind the guesser's address: {r['late_attendee']}"
    )
    print(
        f"  Daphne peak memory (VmHWM): {[m['peak_mib'] for m in r['memory_end']]} MiB (aim < {AIM_PEAK_MIB:.0f}); RSS at start {[m['rss_mib'] for m in r['memory_start']]}, at end {[m['rss_mib'] for m in r['memory_end']]}"
    )
    page = r["largest_page"]
    print(
        f"  largest page the attacker got: {page['bytes']:,} bytes ({page['what']}; aim < {AIM_PAGE_BYTES:,}); "
        f"websockets from one address: {r['sockets']}"
    )
    for attack, statuses in r["attacks"].items():
        print(f"  {attack:9} {statuses}")
    if r["wrong_codes_per_s"] is not None:
        print(
            f"  guessing: {r['wrong_codes_per_s']} wrong join codes a second answered, before the attendees came; the "
            f"first of 10 open rooms then takes {r['guess_days_10_rooms']} days on average (31^6/11 guesses)"
        )
    if r["kafka"] is not None:
        report_kafka(r["kafka"])
    if r["server_notes"]:
        print(f"  the servers said: {r['server_notes']}")
    if r["log_json"] is not None:
        j = r["log_json"]
        print(
            f"  then (after the figures above) GET log.json of the session of many requests: status {j.get('status')}, "
            f"{j.get('bytes', 0):,} bytes in {j.get('total_s')} s; its process's VmHWM after it {j['peak_mib_after']} MiB"
        )
    if r["opened_after_kill"] is not None:
        report_opened(r["opened_after_kill"])
    print(f"  left in the database: {r['left_in_database']}")
    print(f"  request time nginx measured (s, requests), the most in all: {r['request_time_s']}")
    other = {k: v for k, v in r["errors"]["counts"].items() if k not in r["well_behaved_errors"]}
    if other:
        print(f"  other problems: {other}")
        for kind, examples in r["errors"]["examples"].items():
            print(f"    {kind}: {examples}")
    print(f"  aims: {r['aims']}")


def report_kafka(k: dict) -> None:
    a = dict(k["attacks"])
    for name in [n for n, x in a.items() if "no Metadata answer" in x]:
        print(f"    {name}: the session answered no Metadata request: {a.pop(name)['no Metadata answer']}")
    where = ", ".join(f"{t['name']} {t['sid']} in :{t['owner'].rsplit(':', 1)[1]}" for t in k["sessions"].values())
    print(f"  Kafka clients, {k['during_s']} s, from a process of their own ({k['cpu_s']} s of CPU): sessions {where}")
    if "flood" in a:
        f = a["flood"]
        print(
            f"    produce flood, 100 KB random values: offered {f['offered'].get('records', 0):,} records "
            f"({f['offered'].get('bytes', 0):,} bytes), delivered {f['delivered'].get('records', 0):,} "
            f"({f['delivered'].get('bytes', 0):,} bytes); errors {f['errors'] or 'none'}; never sent or answered "
            f"{f['never_sent_or_answered']:,}; throttled {f['throttles']} times, at most {f['throttle_ms_max']} ms, "
            f"{f['throttle_s_total']} s in all"
        )
    if "oversize" in a:
        print(f"    oversize (librdkafka names Kafka's MESSAGE_TOO_LARGE MSG_SIZE_TOO_LARGE): {a['oversize']}")
    if "topics" in a:
        t = a["topics"]
        print(f"    topics: {t['answers']}; the flood went to {t['topics_flooded']} topics")
        for what, message in t["examples"].items():
            print(f"      {what}: {message[:160]}")
    if "unread" in a:
        u = a["unread"]
        print(
            f"    never read: {u['sockets']} sockets wrote {u['metadata_requests_pushed']:,} Metadata requests "
            f"({u['bytes_pushed']:,} bytes) into the kernel's buffers; closed by the server {u['closed_by_server']}, "
            f"not read (muted) for the last 5 s or more {u['stuck_for_5_s_or_more']}"
        )
    if "poll" in a:
        p = a["poll"]
        print(
            f"    polling consumer (raw Fetch, max wait 0, from offset 0): {p['fetches_answered']:,} answered "
            f"({p['fetches_per_s']:,}/s), {p['bytes_answered_per_s']:,} bytes/s; throttled answers "
            f"{p['throttled_answers']:,}, at most {p['throttle_ms_max']} ms; errors {p['errors'] or 'none'}; closed "
            f"{p['connections_closed_by_server']}; waits of 30 s for an answer {p['waits_of_30_s']}"
        )
    if "storm" in a:
        print(f"    reconnect storm: {a['storm']}")
    if "log" in a:
        lg = a["log"]
        for what in ("fetch", "metadata"):
            x = lg[what]
            print(
                f"    session of many requests, {what} pipeline: {x['answered']:,} answered of {x['sent']:,} written "
                f"to its socket ({x['answered_per_s']:,}/s), {x['bytes_sent']:,} bytes; throttled {x['throttled_answers']}; "
                f"errors {x['errors'] or 'none'}; closed by the server {x['closed_by_server']}"
            )
    print(f"    logs settled: {k['settled']}")
    print(f"    listeners at the end: {k['listeners']}")
    pages = [p for p in k["pages"] if p.get("status") == 200]
    if pages:
        slow = max(pages, key=lambda p: p["total_s"])
        print(
            f"    the attacker's {len(k['pages'])} page fetches of these sessions: largest "
            f"{max(p['bytes'] for p in pages):,} bytes, slowest {slow['total_s']} s ({slow['session']} at {slow['at']}, "
            f"{slow['when']})"
        )


def report_opened(o: dict) -> None:
    print(
        f"  after SIGKILL of the first Daphne, every session opened in the second (pid {o['process']}): slowest "
        f"{o['slowest_s']} s (aim < {AIM_OPEN_S} s), its VmHWM then {o['peak_mib']} MiB"
    )
    others = [x for x in o["opened"] if not x["session"].startswith("kafka")]
    for x in o["opened"]:
        if x in others:
            continue
        cells = ", ".join(
            f"{k} {x[k].get('status')} {x[k].get('first_byte_s')}/{x[k].get('total_s')} s {x[k].get('bytes', 0):,} B"
            for k in ("page", "middle", "ws")
        )
        print(
            f"    {x['session']:12} {x['steps']} steps, middle {x['middle_step']}: {cells} (first byte/total); "
            f"RSS {x['rss_before_mib']} -> {x['rss_after_mib']} MiB, VmHWM {x['hwm_before_mib']} -> {x['hwm_after_mib']}"
        )
    if others:
        slow = max(others, key=lambda x: x["slowest_s"])
        print(
            f"    the {len(others)} others (attendees', web attacks'): slowest {slow['slowest_s']} s ({slow['session']}, "
            f"{slow['steps']} steps); failed {[x['session'] for x in others if x['failed']] or 'none'}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--attacks", choices=ATTACKS, default="all", help="the web attacks, the Kafka clients', or both (default)"
    )
    ap.add_argument("--attendees", type=int, default=10)
    ap.add_argument("--before", type=float, default=40.0, help="seconds the attendees work alone (default 40)")
    ap.add_argument(
        "--during", type=float, default=150.0, help=f"seconds under attack (default 150, at most {MAX_DURING_S:.0f})"
    )
    ap.add_argument("--pace", default="1.0,2.0", help="seconds between an attendee's commands, min,max")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the servers' logs and files (printed at the end)")
    args = ap.parse_args(argv)
    if not 1 <= args.attendees <= 40:
        ap.error("--attendees: 1 to 40")

    def stop(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    result = run(args)
    print(json.dumps(result, indent=2) if args.json else "", end="")
    if not args.json:
        report(result)
    return 0 if all(result["aims"].values()) and not result["errors"]["counts"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
