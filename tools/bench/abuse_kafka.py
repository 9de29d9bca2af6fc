"""The Kafka-client attacks of issue 30 ("A door that holds"), which tools/bench/abuse.py runs as a process of its
own: the attacker's loops then take no time from the threads that time the attendees (one interpreter lock), and
its CPU is counted apart.

    python tools/bench/abuse_kafka.py --nginx URL --daphne URL --daphne URL --address IP (--end EPOCH_S | --during S)
                                      [--settle-s 6]

It makes four free-play sessions (POST /new/ through nginx, from the attacker's address) and makes them listen,
two in each Daphne: POST /s/<id>/listen/ goes to that Daphne itself, with the attacker's address in
X-Forwarded-For as nginx would pass it, because `listeners_per_client` (2) counts per process. It prints
`ready <json>` (the sessions, and which process holds each) and attacks until --end (the epoch second abuse.py's
attendees stop at; or for --during seconds), every loop as fast as the answers come:

  flood    (session "flood", second Daphne) a confluent-kafka producer of 100 KB random values, as fast as it goes,
           over every partition of every topic the session has (its own queue capped at 64 MB, this machine's
           memory); a second one sends a 2 MB record every 2 s (its message.max.bytes raised); every 5 s a raw socket
           announces a request of 5 MB (over socket.request.max.bytes).
  topics   (session "flood") CreateTopics "big" of 100,000 partitions and CreatePartitions of orders to 100,000,
           then 40 topics of 4 partitions (the policy lets 31 in: 32 topics, 128 partitions) for the flood to fill,
           then the first two again every 5 s.
  unread   (session "poll", first Daphne) 20 raw sockets sending Metadata requests without pause, never reading.
  poll     (session "poll") orders seeded with 900 KB, then a raw Fetch loop on each broker from offset 0 of the
           partitions it leads, fetch.wait.max.ms 0, the next Fetch as soon as an answer comes.
  storm    (session "storm", second Daphne) 6 loops: connect, ApiVersions, close, again.
  log      (session "log", first Daphne) a Fetch pipeline and a Metadata pipeline (rawkafka.Pipeline) for the whole
           attack: the session of many requests whose process abuse.py kills afterwards.

Every ten seconds it fetches each session's page from the process that holds it. Afterwards it waits for the
sessions' logs to settle (their version unchanged for 6 s), fetches each page at its last and its middle step,
asks each listener's state, and prints one JSON line: what each attack's clients were answered (Kafka's error names,
throttle times, bytes sent and accepted, connections muted or closed), the pages' sizes and times, its own CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import random
import re
import resource
import socket
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "bench"))

import rawkafka  # noqa: E402
from confluent_kafka import KafkaError, KafkaException, Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402
from opening import steps_of, timed_get  # noqa: E402

from tests.web.http import Browserish  # noqa: E402

QUIET = logging.getLogger("abuse-kafka")  # librdkafka's complaints about throttles and refusals, not printed
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False
VALUE_BYTES = 100_000
OVERSIZE_BYTES = 2_000_000
OVER_REQUEST_BYTES = 5_000_000
UNREAD_SOCKETS = 20
STORM_LOOPS = 6
FILL_TOPICS = 40
VERSION = re.compile(r'id="state-version" data-version="(\d+)"')
SETTLE_S = 6.0
SETTLE_CAP_S = 90.0
LAYOUT_TIMEOUT_S = 120.0
NO_ANSWER = "no answer in 30 s"


@dataclass
class Target:
    name: str
    sid: str
    owner: str  # the Daphne that holds its listener
    bootstrap: str


def error_name(err) -> str:
    if isinstance(err, KafkaException):
        err = err.args[0]
    return err.name() if isinstance(err, KafkaError) else type(err).__name__


class Attacker:
    def __init__(
        self, nginx: str, daphnes: list[str], address: str, end_epoch_s: float, settle_s: float = SETTLE_S
    ) -> None:
        self.nginx, self.daphnes, self.address, self.end_epoch_s = nginx, daphnes, address, end_epoch_s
        self.settle_s = settle_s
        self.during_s = 0.0
        self.headers = {"X-Forwarded-For": address}
        self.targets: dict[str, Target] = {}
        self.stop_at = 0.0
        self.lock = threading.Lock()
        self.out: dict[str, dict] = {}
        self.topics = ["orders"]
        self.pages: list[dict] = []
        self.failures: list[str] = []

    def running(self) -> bool:
        return time.monotonic() < self.stop_at

    def pause(self, s: float) -> None:
        time.sleep(min(s, max(0.0, self.stop_at - time.monotonic())))

    # ------------------------------------------------------------------------------------------ the sessions
    def prepare(self) -> None:
        for name, owner in (("log", 0), ("poll", 0), ("flood", 1), ("storm", 1)):
            creator = Browserish(self.nginx, self.headers)
            sid = creator.new_session("")
            direct = Browserish(self.daphnes[owner], self.headers)
            for cookie in creator.jar:
                direct.jar.set_cookie(cookie)
            status, body, _h = direct.post(f"/s/{sid}/listen/")
            if status != 200 or json.loads(body).get("state") != "listening":
                raise RuntimeError(f"POST /s/{sid}/listen/ on {self.daphnes[owner]} -> {status}: {body[:300]}")
            self.targets[name] = Target(name, sid, self.daphnes[owner], json.loads(body)["bootstrap_servers"])

    def brokers(self, name: str) -> list[tuple[str, int]]:
        return rawkafka.parse_bootstrap(self.targets[name].bootstrap)

    def layout(self, attack: str, t: Target) -> rawkafka.Layout | None:
        """Where orders' partitions lead, or None (said in the attack's outcome) when the session does not answer
        Metadata in LAYOUT_TIMEOUT_S: its connections are muted (the request quota) or its process is swamped."""
        try:
            return rawkafka.layout(t.bootstrap, "orders", timeout_s=LAYOUT_TIMEOUT_S)
        except OSError as exc:
            self.out[attack] = {"no Metadata answer": repr(exc)}
            return None

    # ------------------------------------------------------------------------------------------ the attacks
    def flood(self) -> None:
        t = self.targets["flood"]
        throttles: list[float] = []
        delivered = Counter()
        errors = Counter()

        def done(err, msg) -> None:
            if err is None:
                delivered["records"] += 1
                delivered["bytes"] += len(msg)
            else:
                errors[err.name()] += 1

        producer = Producer(
            {
                "bootstrap.servers": t.bootstrap,
                "client.id": "flood",
                "queue.buffering.max.kbytes": 65536,
                "throttle_cb": lambda event: throttles.append(event.throttle_time),
                "logger": QUIET,
            }
        )
        offered = Counter()
        i = 0
        while self.running():
            topic = self.topics[i % len(self.topics)]
            try:
                producer.produce(topic, value=os.urandom(VALUE_BYTES), on_delivery=done)
                offered["records"] += 1
                offered["bytes"] += VALUE_BYTES
                i += 1
            except BufferError:
                producer.poll(0.05)  # its queue is full: the broker takes no more for now
            except KafkaException as exc:
                errors[error_name(exc)] += 1
                self.pause(0.1)
            producer.poll(0)
        producer.flush(5)
        left = len(producer)
        producer.purge()
        producer.flush(5)
        self.out["flood"] = {
            "offered": dict(offered),
            "delivered": dict(delivered),
            "errors": dict(errors),
            "never_sent_or_answered": left,
            "throttles": len(throttles),
            "throttle_ms_max": round(max(throttles, default=0) * 1000),
            "throttle_s_total": round(sum(throttles), 1),
        }

    def oversize(self) -> None:
        t = self.targets["flood"]
        errors = Counter()
        producer = Producer(
            {
                "bootstrap.servers": t.bootstrap,
                "client.id": "oversize",
                "message.max.bytes": 3_000_000,
                "logger": QUIET,
            }
        )
        closed = Counter()
        last_raw = 0.0
        while self.running():
            producer.produce(
                "orders",
                value=os.urandom(OVERSIZE_BYTES),
                partition=0,
                on_delivery=lambda err, _m: errors.update([err.name() if err else "delivered"]),
            )
            producer.poll(0)
            if time.monotonic() - last_raw >= 5:
                last_raw = time.monotonic()
                closed[self.over_request(t)] += 1
            self.pause(2)
        producer.flush(30)
        if len(producer):
            errors["not answered in 30 s"] += len(producer)
        self.out["oversize"] = {"2 MB records": dict(errors), f"{OVER_REQUEST_BYTES:,}-byte requests": dict(closed)}

    def over_request(self, t: Target) -> str:
        host, port = random.choice(self.brokers(t.name))
        try:
            with socket.create_connection((host, port), timeout=10) as s:
                s.sendall(struct.pack(">i", OVER_REQUEST_BYTES) + b"\x00" * 1000)
                return "closed by the server" if s.recv(4096) == b"" else "answered"
        except TimeoutError:
            return "left open (10 s)"
        except OSError as exc:
            return f"closed by the server ({type(exc).__name__})"

    def topics_(self) -> None:
        t = self.targets["flood"]
        admin = AdminClient({"bootstrap.servers": t.bootstrap, "logger": QUIET})
        answers = Counter()
        examples: dict[str, str] = {}

        def outcome(what: str, future) -> bool:
            try:
                future.result(30)
                answers[f"{what}: created"] += 1
                return True
            except TimeoutError:
                answers[f"{what}: {NO_ANSWER}"] += 1
                return False
            except Exception as exc:  # a KafkaException carrying the broker's error
                name = error_name(exc)
                answers[f"{what}: {name}"] += 1
                err = exc.args[0] if exc.args else exc
                examples.setdefault(f"{what}: {name}", err.str() if isinstance(err, KafkaError) else str(err))
                return False

        def huge() -> None:
            outcome("CreateTopics big x100000", admin.create_topics([NewTopic("big", 100_000, 1)])["big"])
            outcome(
                "CreatePartitions orders to 100000",
                admin.create_partitions([NewPartitions("orders", 100_000)])["orders"],
            )

        huge()
        made = admin.create_topics([NewTopic(f"fill-{i}", 4, 1) for i in range(FILL_TOPICS)])
        for name, future in made.items():
            if outcome("CreateTopics fill-N x4", future):
                with self.lock:
                    self.topics.append(name)
        while self.running():
            self.pause(5)
            if self.running():
                huge()
        self.out["topics"] = {"answers": dict(answers), "examples": examples, "topics_flooded": len(self.topics)}

    def unread(self) -> None:
        brokers = self.brokers("poll")
        frame = rawkafka.metadata_frame("unread")
        chunk = frame * 256
        socks = []
        for i in range(UNREAD_SOCKETS):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(brokers[i % len(brokers)])
            s.setblocking(False)
            socks.append({"sock": s, "bytes": 0, "progress": time.monotonic(), "closed": False})
        while self.running():
            for st in socks:
                if st["closed"]:
                    continue
                try:
                    n = st["sock"].send(chunk)
                    st["bytes"] += n
                    st["progress"] = time.monotonic()
                except BlockingIOError:
                    pass
                except OSError:
                    st["closed"] = True
            time.sleep(0.02)
        now = time.monotonic()
        for st in socks:  # the server closed it? (an EOF or a reset waits to be read)
            with contextlib.suppress(BlockingIOError, OSError):
                if st["sock"].recv(1, socket.MSG_PEEK) == b"":
                    st["closed"] = True
        open_ = [st for st in socks if not st["closed"]]
        self.out["unread"] = {
            "sockets": len(socks),
            "metadata_requests_pushed": sum(st["bytes"] for st in socks) // len(frame),
            "bytes_pushed": sum(st["bytes"] for st in socks),
            "closed_by_server": len(socks) - len(open_),
            "stuck_for_5_s_or_more": sum(1 for st in open_ if now - st["progress"] >= 5),
            "stuck_since_s_median": round(sorted(now - st["progress"] for st in socks)[len(socks) // 2], 1),
        }
        for st in socks:
            st["sock"].close()

    def poll(self) -> None:
        t = self.targets["poll"]
        seed = Producer({"bootstrap.servers": t.bootstrap, "client.id": "seed", "logger": QUIET})
        for i in range(9):
            seed.produce("orders", value=os.urandom(VALUE_BYTES), partition=i % 3)
        seed.flush(60)
        where = self.layout("poll", t)
        if where is None:
            return
        led: dict[int, list[int]] = {}
        for partition, broker in where.leaders.items():
            led.setdefault(broker, []).append(partition)
        results: list[dict] = []
        threads = [
            threading.Thread(target=self._poll_loop, args=(where.brokers[b], parts, results), daemon=True)
            for b, parts in led.items()
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        seconds = max(1e-9, self.during_s)
        total = Counter()
        errors = Counter()
        for r in results:
            total.update({k: v for k, v in r.items() if isinstance(v, int)})
            errors.update(r["errors"])
        self.out["poll"] = {
            "fetches_answered": total["answered"],
            "fetches_per_s": round(total["answered"] / seconds),
            "bytes_answered": total["bytes"],
            "bytes_answered_per_s": round(total["bytes"] / seconds),
            "throttled_answers": total["throttled"],
            "throttle_ms_max": max((r["throttle_ms_max"] for r in results), default=0),
            "errors": dict(errors),
            "connections_closed_by_server": total["closed"],
            "waits_of_30_s": total["waits_of_30_s"],
        }

    def _poll_loop(self, address: tuple[str, int], partitions: list[int], results: list[dict]) -> None:
        r = {
            "answered": 0,
            "bytes": 0,
            "throttled": 0,
            "throttle_ms_max": 0,
            "closed": 0,
            "waits_of_30_s": 0,
            "errors": Counter(),
        }
        frame = rawkafka.fetch_frame("poller", "orders", [(p, 0) for p in partitions], max_wait_ms=0)
        conn = None

        def answer() -> bytes | None:
            while True:
                try:
                    return conn.read_frame()
                except TimeoutError:
                    r["waits_of_30_s"] += 1  # muted: its session's request quota, or its byte quota
                    if not self.running():
                        return None

        try:
            conn = rawkafka.Conn(*address, timeout_s=30)
            conn.send(rawkafka.api_versions_frame("poller"))
            answer()
            correlation = 1
            while self.running():
                conn.send(rawkafka.with_correlation(frame, correlation))
                correlation += 1
                payload = answer()
                if payload is None:
                    return
                r["answered"] += 1
                r["bytes"] += len(payload)
                throttle_ms, error = rawkafka.fetch_head(payload)
                if throttle_ms:
                    r["throttled"] += 1
                    r["throttle_ms_max"] = max(r["throttle_ms_max"], throttle_ms)
                if error:
                    r["errors"][rawkafka.error_name(error)] += 1
                if r["answered"] % 100 == 0:
                    r["errors"].update(rawkafka.fetch_errors(payload))
        except (ConnectionError, OSError):
            r["closed"] += 1
        finally:
            if conn is not None:
                conn.close()
            with self.lock:
                results.append(r)

    def storm(self) -> None:
        brokers = self.brokers("storm")
        counts = Counter()
        frame = rawkafka.api_versions_frame("storm")

        def loop() -> None:
            while self.running():
                address = random.choice(brokers)
                conn = None
                try:
                    conn = rawkafka.Conn(*address, timeout_s=5)
                    counts["connected"] += 1
                    conn.send(frame)
                    conn.read_frame()
                    counts["answered"] += 1
                except ConnectionRefusedError:
                    counts["refused"] += 1
                except TimeoutError:
                    counts["no answer in 5 s"] += 1
                except (ConnectionError, OSError):
                    counts["closed by the server"] += 1
                finally:
                    if conn is not None:
                        conn.close()

        started = time.monotonic()
        threads = [threading.Thread(target=loop, daemon=True) for _ in range(STORM_LOOPS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        seconds = max(1e-9, time.monotonic() - started)
        self.out["storm"] = {**counts, "connections_per_s": round(counts["connected"] / seconds)}

    def log(self) -> None:
        t = self.targets["log"]
        where = self.layout("log", t)
        if where is None:
            return
        fetches = rawkafka.Pipeline(
            *where.leader_of(0),
            rawkafka.fetch_frame("log-fetch", "orders", [(0, 0)]),
            stop_at=self.stop_at,
            sample_every=1000,
        )
        metadata = rawkafka.Pipeline(
            *where.leader_of(1), rawkafka.metadata_frame("log-metadata", ["orders"]), stop_at=self.stop_at, fetch=False
        )
        threads = [threading.Thread(target=p.run, daemon=True) for p in (fetches, metadata)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.out["log"] = {
            "fetch": fetches.summary(),
            "metadata": metadata.summary(),
            "requests_answered": fetches.answered + metadata.answered,
        }

    def watch(self) -> None:
        """Each session's page every ten seconds, from the process that holds it."""
        while self.running():
            for t in self.targets.values():
                self.page(t, None, "during")
            self.pause(10)

    def page(self, t: Target, at: int | None, when: str) -> str:
        """GET the session's page (at step `at`, or its last) from its process: kept are its size and times."""
        path = f"/s/{t.sid}/" + (f"?at={at}" if at is not None else "")
        got = timed_get(t.owner, path, self.headers)
        body = got.pop("body", "") or ""
        got.update(session=t.name, at="last" if at is None else at, when=when)
        with self.lock:
            self.pages.append(got)
        if got.get("status") != 200:
            self.failures.append(f"GET {path} ({t.name}) -> {got.get('status')} {got.get('error', '')}")
        return body

    # ------------------------------------------------------------------------------------------ the run
    def run(self) -> dict:
        self.during_s = max(0.0, self.end_epoch_s - time.time())
        self.stop_at = time.monotonic() + self.during_s
        attacks = [self.flood, self.oversize, self.topics_, self.unread, self.poll, self.storm, self.log, self.watch]
        threads = []
        for fn in attacks:

            def go(fn=fn) -> None:
                try:
                    fn()
                except Exception as exc:
                    self.failures.append(f"{fn.__name__}: {exc!r}")

            th = threading.Thread(target=go, name=fn.__name__, daemon=True)
            th.start()
            threads.append(th)
        for th in threads:
            th.join(timeout=self.during_s + 120)
        settled = {t.name: self.settle(t) for t in self.targets.values()}
        for t in self.targets.values():
            steps = steps_of(self.page(t, None, "after"))
            self.page(t, (steps or 0) // 2, "after")
        states = {}
        for t in self.targets.values():
            got = timed_get(t.owner, f"/s/{t.sid}/listen/", self.headers)
            states[t.name] = json.loads(got["body"]) if got.get("status") == 200 else got.get("status")
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "during_s": round(self.during_s, 1),
            "sessions": {k: vars(v) for k, v in self.targets.items()},
            "attacks": self.out,
            "settled": settled,
            "listeners": states,
            "pages": self.pages,
            "largest_page": max(self.pages, key=lambda p: p.get("bytes", 0), default=None),
            "failures": self.failures,
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_mib": round(usage.ru_maxrss / 1024, 1),
        }

    def settle(self, t: Target) -> dict:
        """Wait until the session's log version has not changed for `settle_s` (the listener stored what came)."""
        started = time.monotonic()
        last, since = None, time.monotonic()
        while time.monotonic() - started < SETTLE_CAP_S:
            got = timed_get(t.owner, f"/s/{t.sid}/", self.headers)
            m = VERSION.search(got.get("body") or "")
            version = int(m.group(1)) if m else None
            if version != last:
                last, since = version, time.monotonic()
            elif time.monotonic() - since >= self.settle_s:
                break
            time.sleep(1.0)
        return {"version": last, "steps": steps_of(got.get("body") or ""), "s": round(time.monotonic() - started, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nginx", required=True)
    ap.add_argument("--daphne", action="append", required=True, help="twice: the first holds log and poll")
    ap.add_argument("--address", required=True, help="the attacker's X-Forwarded-For")
    when = ap.add_mutually_exclusive_group(required=True)
    when.add_argument("--end", type=float, help="when the attack ends (seconds since the epoch)")
    when.add_argument("--during", type=float, help="or: seconds the attack lasts once the sessions listen")
    ap.add_argument(
        "--settle-s",
        type=float,
        default=SETTLE_S,
        help=f"seconds a log's version must stay unchanged after the attack (default {SETTLE_S:.0f}: quiet rows come after 5 s)",
    )
    args = ap.parse_args(argv)
    if len(args.daphne) != 2:
        ap.error("--daphne: give two")
    attacker = Attacker(args.nginx, args.daphne, args.address, args.end or 0.0, args.settle_s)
    attacker.prepare()
    if args.during is not None:
        attacker.end_epoch_s = time.time() + args.during
    print("ready " + json.dumps({k: vars(v) for k, v in attacker.targets.items()}), flush=True)
    result = attacker.run()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
