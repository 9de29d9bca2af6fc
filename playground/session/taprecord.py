"""Record what a tap's clients send as a session (issue 34): `manage.py tap --record-session [TITLE]` stores the
requests the real cluster's clients sent through the tap as the external clients' rows of a new simulator session,
as a session's listener stores its own clients' (session/external.py), so that the real incident replays on the
simulator: opened at /s/<id>/, scrubbed, forked, compared across Kafka releases, shared.

The session: a one-broker simulated cluster (every client connection is a connection to its broker, so the leaders
and coordinators the clients found upstream are that broker; what upstream's brokers did apart from answering, a
broker stopping, is not in it), with the upstream's topics when the tap started (partition counts as upstream;
none when they are more than the scenario format's bounds, and then each as an answer first names it) and the Kafka
release `kafka` (3.9 unless told). Its log opens with a listen entry naming the tap's first listener and this process
(the owner: while it beats, other processes leave the session to it, as they leave a listener's), then what came
in, in rows as the listener cuts them.

Each request is fed to the simulator as it goes upstream (its answer is not sent anywhere: the client has upstream's),
but a Fetch once upstream's answer came, reading only as far as that answer did (a record produced meanwhile would
otherwise reach the replayed consumer twice: Translation.as_answered), translated by playground/tap/translate.py: the
producer ids, epochs, member ids and topic ids upstream handed out become those the simulator handed out for the same
request. What a client does after an answer may depend on it (a
producer sends after its InitProducerId, a second instance inits after the first one's send was acknowledged), so
the simulator answers each request before upstream's answer reaches the client: when upstream's comes first, the
simulator's clock runs ahead to its answer (a replay runs ahead alike: the next input comes at the time the
simulator had reached). Answers that hand out identifiers are read from both and paired. A topic upstream names
that the simulator lacks is created on the tap's own connection (0) with upstream's partition count, as a
CreateTopics request in the log.

Bounds, as the listener's: a request frame over `kafka_request_bytes` is forwarded and not recorded (the recording
closes that client's connection there, as the listener's broker would have closed it, and ignores the rest of it);
the log stops growing at the session's `commands` and `kafka_log_bytes`, and the recording ends ("full") while the
tap goes on. The simserver bounds (quotas, message sizes) apply to the simulator's side as to a listener's session.
"""

from __future__ import annotations

import json
import logging
import queue
import struct
import threading
import time
from collections.abc import Mapping
from typing import Any

from django.db import close_old_connections, connection

from playground.engine.spec import Profile
from playground.protocol.messages import build, decode_response, encode_request, peek, request_class
from playground.scenario.loader import parse_scenario
from playground.session import external, limits
from playground.session.cache import CACHE
from playground.session.commands import Change, commit
from playground.session.create import create
from playground.session.listener import IDLE_CHECK_S, beat
from playground.session.live import CommandError, Live, run_entry
from playground.tap import wire
from playground.tap.observer import first_error
from playground.tap.translate import PAIRED, Translation, fetched_through

log = logging.getLogger("playground.tap")

BROKER = 1  # the session's one broker
TAP_CONN = 0  # the tap's own connection (topics created as upstream had them); clients' are 1, 2, ...
FLUSH_S = 0.5  # what came in is stored within this
PAIR_WAIT_MS = 120_000  # how far the simulator's clock runs ahead for an answer upstream already gave
# how far it runs ahead for records upstream's Fetch answer returned (markers take a few interbroker round trips; a
# record the simulator never had must not run its clock into transactions' timeouts)
FETCH_CATCH_UP_MS = 1_000
CREATE_TOPICS, CREATE_TOPICS_VERSION = 19, 4
# The coordinator's APIs: an answer here may differ in timing alone (markers still being written)
COORDINATED = frozenset(
    {wire.INIT_PRODUCER_ID, wire.ADD_PARTITIONS_TO_TXN, wire.ADD_OFFSETS_TO_TXN, wire.END_TXN, wire.TXN_OFFSET_COMMIT}
)
RETRIABLE = frozenset({"CONCURRENT_TRANSACTIONS", "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR",
                       "COORDINATOR_NOT_AVAILABLE"})  # fmt: skip
RETRY_BACKOFF_MS = 20  # librdkafka retries CONCURRENT_TRANSACTIONS after about this (kafka-clients: retry.backoff.ms)
MAX_TRIES = 50
_STOP = object()


def scenario_text(title: str, upstream: str, topics: Mapping[str, int], kafka: str) -> str:
    """The session's scenario: one broker, the topics, an actor to read them (read_committed) and a note."""
    # all of them, when they fit the format's and the policy's bounds; else none: each is created as upstream has it
    # once an answer names it (a shared cluster's hundreds of topics are not a session's)
    fits = len(topics) <= 32 and sum(topics.values()) <= 128 and all(0 < n <= 64 for n in topics.values())
    kept = dict(sorted(topics.items())) if fits else {}
    title = title or f"tap {upstream}"
    lines = [
        "format: 1",
        "id: tap-recording",
        f"title: {{en: {json.dumps('Tap: ' + title)}, zh: {json.dumps('旁路录制：' + title, ensure_ascii=False)}}}",
        f"profile: {{kafka: {json.dumps(kafka)}}}",
        "cluster:",
        "  brokers: 1",
    ]
    if kept:
        lines.append("  topics:")
        lines += [f"    {json.dumps(name)}: {{partitions: {n}}}" for name, n in kept.items()]
        lines += [
            "actors:",
            f"  rc: {{consumer: {{isolation.level: read_committed, topics: {json.dumps(list(kept))}}}}}",
        ]
    else:
        lines += ["actors:", "  idle: {producer: {}}"]
    note_en = f"What the clients of {upstream} sent through the tap, replayed on the simulator."
    note_zh = f"{upstream} 的客户端经 tap 发送的请求，在模拟器上重放。"
    lines += ["steps:", f"  - note: {{en: {json.dumps(note_en)}, zh: {json.dumps(note_zh, ensure_ascii=False)}}}"]
    return "\n".join(lines) + "\n"


class TapRecording:
    """See the module's docstring. The hooks (`request`, `too_large`, `answer`, `closed`) are called on the tap's
    loop and only queue; a thread of its own feeds the simulator and stores the rows."""

    def __init__(
        self,
        *,
        upstream: str,
        listener: tuple[str, int],
        topics: Mapping[str, int],
        title: str = "",
        kafka: str = "3.9",
    ) -> None:
        self.upstream = upstream
        self.listener = listener
        self.topics = dict(topics)
        self.title = title
        self.kafka = kafka
        self.max_frame_bytes = limits.limit("kafka_request_bytes")
        self.sid = ""
        self.drive_secret = ""
        self.state = "new"  # recording, then stopped | full | failed
        self.requests = 0
        self.unrecorded = 0  # request frames forwarded and not recorded (over the bound, or after it on its connection)
        self.retried = 0  # requests the recording tried again where the simulator was behind upstream
        self.error = ""
        self.core: Any = None
        self.translation = Translation(self._sim_topic_id)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._dropped: set[int] = set()  # connections no longer recorded
        self._asked: dict[tuple[int, int], tuple[int, int, bytes]] = {}  # (conn, correlation) -> api key, version
        # (and the request, of the coordinator's APIs) fed to the simulator and not answered yet
        self._sim: dict[tuple[int, int], tuple[Any, bytes]] = {}  # the simulator's answers (and requests) waiting
        self._absorb: dict[tuple[int, int], Any] = {}  # (conn, api key) -> the simulator's answer to the next try
        self._absorbed: dict[tuple[int, int], Any] = {}  # (conn, correlation) of a try not fed -> that answer
        self._held: dict[tuple[int, int], bytes] = {}  # (conn, correlation) -> a Fetch fed once upstream answers it
        self._anchor_vt = 0
        self._anchor_wall = 0.0
        self._last_flush = 0.0
        self._last_beat = 0.0
        self._instant: int | None = None
        self._correlation = 0

    # ------------------------------------------------------------------------------------------ the tap's side
    def request(self, conn_id: int, payload: bytes) -> None:
        if self.state == "recording":
            self._queue.put(("request", conn_id, payload))

    def too_large(self, conn_id: int, size: int) -> None:
        if self.state == "recording":
            self._queue.put(("too_large", conn_id, size))

    def answer(self, conn_id: int, api_key: int, api_version: int, correlation_id: int, body: Any) -> None:
        """Upstream's answer (its body when the tap decoded it, else None)."""
        if self.state == "recording":
            self._queue.put(("answer", conn_id, api_key, correlation_id, body))

    def closed(self, conn_id: int) -> None:
        if self.state == "recording":
            self._queue.put(("closed", conn_id))

    def report(self) -> dict[str, Any]:
        return {
            "session": self.sid,
            "path": f"/s/{self.sid}/" if self.sid else "",
            "state": self.state,
            "kafka": self.kafka,
            "requests": self.requests,
            "unrecorded": self.unrecorded,
            "retried": self.retried,
            **({"error": self.error} if self.error else {}),
        }

    # ------------------------------------------------------------------------------------------ lifecycle
    def start(self) -> dict[str, Any]:
        """Make the session and its listen entry (blocking: the database), then record in a thread."""
        text = scenario_text(self.title, self.upstream, self.topics, self.kafka)
        scenario = parse_scenario(text)
        row = create(scenario, source=text, backend="sim", profile=Profile(self.kafka))
        self.sid, self.drive_secret = row.id, row.drive_secret
        bounds = limits.kafka_bounds()
        entry = {
            external.LISTEN: {
                "brokers": {str(BROKER): [self.listener[0], self.listener[1]]},
                "owner": external.OWNER,
                "session": self.sid,
                "wall_ms": int(time.time() * 1000),
                "config": bounds.to_config(),
                "tap": self.upstream,  # who the clients really talked to
            }
        }

        def mutate(live: Live) -> Change:
            return Change(append=[run_entry(live, entry)], message="listen")

        beat(self.sid)
        live, _change = commit(self.sid, mutate)
        self.core = external.core_of(live.backend)
        self._anchor_vt, self._anchor_wall = self.core.now_ms, time.monotonic()
        external.CLOCKS[self.sid] = self._now
        self._last_flush = self._last_beat = time.monotonic()
        self.state = "recording"
        self._thread = threading.Thread(target=self._run, name=f"tap-record-{self.sid}", daemon=True)
        self._thread.start()
        return self.report()

    def stop(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Store what came in and the unlisten entry (blocking)."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout_s)
        return self.report()

    def _now(self) -> int:
        """The virtual time now: the wall clock's since recording began, or where the simulator ran ahead to."""
        if self._instant is not None:
            return max(self._instant, int(self.core.now_ms))
        vt = self._anchor_vt + int((time.monotonic() - self._anchor_wall) * 1000)
        if self.core is not None and self.core.now_ms > vt:
            self._anchor_vt, self._anchor_wall = self.core.now_ms, time.monotonic()
            vt = self.core.now_ms
        return vt

    # ------------------------------------------------------------------------------------------ the thread
    def _run(self) -> None:
        try:
            while True:
                self._due()
                try:
                    item = self._queue.get(timeout=self._wait_s())
                except queue.Empty:
                    continue
                if item is _STOP:
                    break
                if self.state == "recording":
                    self._instant = self._now()  # an item is handled at one time: its checks and what it feeds
                    try:
                        self._locked(lambda live, item=item: self._handle(live, item))
                    finally:
                        self._instant = None
            self._finish("stopped")
        except Exception as exc:
            log.exception("tap: recording session %s failed", self.sid)
            self.error = f"{type(exc).__name__}: {exc}"
            self._finish("failed")
        finally:
            connection.close()

    def _wait_s(self) -> float:
        """Until the next thing due: a timer of the simulator (a transaction's timeout), or a flush."""
        due = self.core.next_due_ms() if self.state == "recording" else None
        if due is None:
            return FLUSH_S
        return min(FLUSH_S, max(0.001, (int(due) - self._now()) / 1000))

    def _due(self) -> None:
        if self.state != "recording":
            return
        due = self.core.next_due_ms()
        if due is not None and due <= self._now():
            self._locked(external.tick)
        now = time.monotonic()
        if now - self._last_flush >= FLUSH_S:
            self._last_flush = now
            self._flush()
        if now - self._last_beat >= IDLE_CHECK_S:
            self._last_beat = now
            close_old_connections()
            beat(self.sid)

    def _locked(self, fn: Any) -> None:
        with CACHE.lock(self.sid):
            live = CACHE.peek(self.sid)
            core = external.core_of(live.backend) if live is not None else None
            if live is None or core is None or core is not self.core:
                raise CommandError("the recorded session was evicted from this process's cache")
            fn(live)
            self._outputs(core.take_output())

    def _flush(self) -> None:
        live = CACHE.peek(self.sid)
        if live is None or not (live.ext_inputs or live.pending):
            return
        live, _change = commit(self.sid, lambda live: Change())  # cuts what came in, stores it
        if live.length >= limits.limit("commands") or live.external_bytes >= limits.limit("kafka_log_bytes"):
            log.warning("tap: session %s is full; the recording ends (the tap goes on)", self.sid)
            self._finish("full")

    def _finish(self, why: str) -> None:
        if self.state not in ("recording", "new") or not self.sid:
            return
        self.state = why
        try:
            followed = self._now()

            def mutate(live: Live) -> Change:
                body: dict[str, Any] = {"why": why, "wall_ms": int(time.time() * 1000)}
                core = external.core_of(live.backend)
                if core is not None:
                    body["vt"] = max(core.now_ms, followed)
                return Change(append=[run_entry(live, {external.UNLISTEN: body})], message="unlisten")

            commit(self.sid, mutate)
        finally:
            external.CLOCKS.pop(self.sid, None)
            beat(self.sid, alive=False)

    # ------------------------------------------------------------------------------------------ feeding
    def _handle(self, live: Live, item: tuple[Any, ...]) -> None:
        kind, conn = item[0], item[1]
        if kind == "request":
            if conn in self._dropped:
                self.unrecorded += 1
                return
            payload = self.translation.request(item[2], conn)
            try:
                api_key, _version, correlation = peek(payload)
            except ValueError:
                api_key = correlation = -1
            done = self._absorb.pop((conn, api_key), None)
            if done is not None:  # the simulator did this already, at an earlier try of the client's
                self._absorbed[(conn, correlation)] = done
                return
            if api_key == wire.FETCH:
                self._held[(conn, correlation)] = payload
                return
            self._feed(live, conn, payload)
        elif kind == "too_large":
            self.unrecorded += 1
            if conn not in self._dropped:
                self._dropped.add(conn)
                external.disconnect(live, conn)  # as the listener's broker closes it (socket.request.max.bytes)
        elif kind == "closed":
            self._dropped.discard(conn)
            self.translation.forget(conn)
            for kept in (self._asked, self._sim, self._absorbed, self._absorb, self._held):
                for key in [k for k in kept if k[0] == conn]:
                    del kept[key]
            external.disconnect(live, conn)
        elif kind == "answer":
            _, conn, api_key, correlation, body = item
            if api_key == wire.METADATA and body is not None:
                self.translation.learn_topics(body)
                self._create_topics(live, body)
            key = (conn, correlation)
            done = self._absorbed.pop(key, None)
            if done is not None:
                if body is not None:
                    self._settle(live, key, api_key, body, done, b"")
                return
            held = self._held.pop(key, None)
            if held is not None:
                self._feed(live, conn, held if body is None else self._as_answered(live, held, body))
            self._run_ahead(live, key)
            sim = self._sim.pop(key, None)
            if sim is not None and body is not None:
                self._settle(live, key, api_key, body, *sim)

    def _run_ahead(self, live: Live, key: tuple[int, int]) -> None:
        """Until the simulator has answered the request upstream answered (as far as PAIR_WAIT_MS ahead)."""
        self._outputs(self.core.take_output())
        while key in self._asked and key[0] in self.core.conns:
            due = self.core.next_due_ms()
            if due is None or due > self.core.now_ms + PAIR_WAIT_MS:
                break
            external.advance(live, due)
            self._outputs(self.core.take_output())

    def _settle(self, live: Live, key: tuple[int, int], api_key: int, upstream: Any, sim: Any, payload: bytes) -> None:
        """Upstream's and the simulator's answers to the same request. Where upstream had done what the simulator had
        not yet (a transaction's markers written: the simulator answers CONCURRENT_TRANSACTIONS), the request is
        tried again as the client would have; where the simulator had and upstream had not, the client's next try is
        not fed (the simulator answered it already). Identifiers handed out are paired."""
        up_error, sim_error = first_error(upstream), first_error(sim)
        tries = 0
        while up_error is None and sim_error in RETRIABLE and payload and tries < MAX_TRIES:
            tries += 1
            self.retried += 1
            external.advance(live, self.core.now_ms + RETRY_BACKOFF_MS)
            self._feed(live, key[0], payload)
            self._run_ahead(live, key)
            again = self._sim.pop(key, None)
            if again is None:
                return
            sim = again[0]
            sim_error = first_error(sim)
        if up_error in RETRIABLE and sim_error is None and api_key in COORDINATED:
            self._absorb[(key[0], api_key)] = sim
        elif api_key in PAIRED:
            self.translation.learn(api_key, upstream, sim)  # it judges each answer's error itself

    def _as_answered(self, live: Live, payload: bytes, upstream: Any) -> bytes:
        """A Fetch to feed now that upstream answered it (Translation.as_answered). The simulator's clock first runs
        ahead (as far as FETCH_CATCH_UP_MS) until its log has what upstream returned (a transaction's markers
        written)."""
        through = fetched_through(upstream, self.translation.topic_names)

        def catch_up(read_committed: bool) -> None:
            external.advance(live, self._now())  # what was due by now is done before its log is read
            self._outputs(self.core.take_output())
            until_ms = self.core.now_ms + FETCH_CATCH_UP_MS
            while any(-1 < self._upper(tp, read_committed) < to for tp, to in through.items()):
                due = self.core.next_due_ms()
                if due is None or due > until_ms:
                    break
                external.advance(live, due)
                self._outputs(self.core.take_output())

        return self.translation.as_answered(payload, through, self._span, self.core.topic_of, catch_up)

    def _upper(self, tp: tuple[str, int], read_committed: bool) -> int:
        """How far a Fetch reads the simulator's partition (its last stable offset or high watermark; -1: none)."""
        name = f"{tp[0]}-{tp[1]}"
        if name not in self.core.cluster.partitions:
            return -1
        log = self.core.cluster.log(name)
        return int(log.last_stable_offset if read_committed else log.high_watermark)

    def _span(self, topic: str, partition: int, start: int, stop: int | None, read_committed: bool) -> int | None:
        """The bytes of the simulator's batches a Fetch from `start` returns, up to offset `stop` (None: the first)."""
        tp = f"{topic}-{partition}"
        if tp not in self.core.cluster.partitions:
            return None
        log = self.core.cluster.log(tp)
        if not log.log_start_offset <= start <= log.log_end_offset:
            return None
        upper = self._upper((topic, partition), read_committed)
        bound = upper if stop is None else min(upper, stop)
        total, i = 0, log.batch_index(start)
        while i < len(log.batches) and log.batches[i].base_offset < bound:
            total += len(self.core.batch_bytes(tp, log.batches[i]))
            if stop is None:
                break
            i += 1
        return total

    def _feed(self, live: Live, conn: int, payload: bytes) -> None:
        try:
            api_key, api_version, correlation = peek(payload)
        except ValueError:
            api_key = api_version = correlation = -1
        if not (api_key == wire.PRODUCE and _acks(payload) == 0):  # acks=0: never answered
            self._asked[(conn, correlation)] = (api_key, api_version, payload if api_key in COORDINATED else b"")
        self.requests += 1
        external.receive(live, conn, BROKER, payload)

    def _outputs(self, outputs: list[Any]) -> None:
        for conn, data in outputs:
            if data is None or len(data) < 8:
                continue
            (correlation,) = struct.unpack_from(">i", data, 4)
            asked = self._asked.pop((conn, correlation), None)
            if asked is None or asked[0] not in PAIRED | COORDINATED:
                continue
            try:
                body = decode_response(asked[0], asked[1], data[4:])[1]
            except Exception:  # kio's DecodeError family: nothing to learn from it
                continue
            self._sim[(conn, correlation)] = (body, asked[2])

    def _create_topics(self, live: Live, metadata: Any) -> None:
        """Topics upstream names that the simulator lacks: created on the tap's connection as upstream has them."""
        missing = {
            str(t.name): len(t.partitions)
            for t in getattr(metadata, "topics", ()) or ()
            if t.name
            and not getattr(t, "is_internal", False)
            and int(getattr(t.error_code, "value", t.error_code)) == 0
            and t.partitions
            and str(t.name) not in self.core.cluster.topics
        }
        if not missing:
            return
        self._correlation += 1
        cls = request_class(CREATE_TOPICS, CREATE_TOPICS_VERSION)
        body = build(
            cls,
            {
                "topics": [
                    {"name": name, "num_partitions": n, "replication_factor": -1, "assignments": [], "configs": []}
                    for name, n in sorted(missing.items())
                ],
                "timeout": 30_000,
                "validate_only": False,
            },
        )
        payload = encode_request(CREATE_TOPICS, CREATE_TOPICS_VERSION, self._correlation, "playground-tap", body)
        self._feed(live, TAP_CONN, payload)
        self._run_ahead(live, (TAP_CONN, self._correlation))  # created before the client, who has them, sends to them

    def _sim_topic_id(self, name: str) -> Any:
        core = self.core
        return core.topic_id(name) if core is not None and name in core.cluster.topics else None


def _acks(payload: bytes) -> int | None:
    head = wire.read_produce_head(payload)
    return head.acks if head is not None else None
