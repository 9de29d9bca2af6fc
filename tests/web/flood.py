"""A session flooded by external clients, built the way an attacker's applications would build it, without sockets:
their request frames go into the session's protocol core as its listener hands them over (session/external.py's
`receive`), and the commit loop stores them as rows of the log (`cut`), so the session replays, scrubs and pages like
any listened-to session. Deterministic: the simulator's virtual time only, no wall clock.

What it sends (issue 30: one confluent-kafka producer flooding 100 KB records made a 56 MB page): a topic of many
partitions; one transactional producer with a 10 KB transactional.id writing big records, a batch per request, in
transactions it commits or aborts; hundreds of plain producers of long client ids, each writing a record whose key and
value are not UTF-8 (and one that is markup); consumers of both isolation levels reading every partition; and offsets
committed for many groups.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from playground.session import CACHE, external, load
from playground.session.commands import Change, commit
from playground.session.live import run_entry
from tests.simserver.wire import Client, batch, fetch_body, produce_body

PRODUCE, FETCH, INIT_PID, ADD_PARTITIONS, END_TXN, CREATE_TOPICS, OFFSET_COMMIT, API_VERSIONS = (
    0,
    1,
    22,
    24,
    26,
    19,
    8,
    18,
)
MARKUP = "<script>alert('x')</script>&amp;"


@dataclass
class Flood:
    topic: str = "flood"
    partitions: int = 80  # more than a page draws strips of
    batches: int = 2000
    value_bytes: int = 100_000
    txn_batches: int = 10  # batches in a transaction; every third transaction is aborted
    per_row: int = 40  # requests stored in a row of the log (a listener cuts a row every so often)
    open_txns: int = 30  # producers of 10 KB transactional ids (one prefix) whose transaction stays open
    plain_clients: int = 500
    client_id_chars: int = 300
    txid_chars: int = 10_240
    consumers: int = 10  # more than the tables have columns for
    groups: int = 300
    steps: list[int] = field(default_factory=list)  # the step after each row (for ?at=)


class SessionClient(Client):
    """tests/simserver/wire.py's client, whose requests go into a live session as its listener feeds them."""

    def __init__(self, live: Any, client_id: str, conns: itertools.count) -> None:
        core = external.core_of(live.backend)
        assert core is not None
        super().__init__(core, client_id, first_conn=next(conns))
        self.live = live
        self._conns = conns

    def conn(self, broker: int) -> int:
        if broker not in self.conns:
            self._next_conn = next(self._conns)
        return super().conn(broker)

    def send(self, broker: int, api_key: int, version: int, body: dict[str, Any], at_ms: int | None = None) -> int:
        from playground.protocol import messages

        self.correlation += 1
        cls = messages.request_class(api_key, version)
        payload = messages.encode_request(api_key, version, self.correlation, self.client_id, messages.build(cls, body))
        conn = self.conn(broker)
        self.pending[self.correlation] = (api_key, version, conn)
        external.receive(self.live, conn, broker, payload)
        self.collect()
        return self.correlation


def listen(sid: str) -> None:
    """The log's listen entry, as a listener of this process writes it (its addresses are never dialled here)."""
    entry = {
        external.LISTEN: {
            "brokers": {"1": ["127.0.0.1", 1], "2": ["127.0.0.1", 2], "3": ["127.0.0.1", 3]},
            "owner": external.OWNER,
            "session": sid,
            "wall_ms": 0,
        }
    }
    commit(sid, lambda live: Change(append=[run_entry(live, entry)], message="listen"))


def _row(sid: str, flood: Flood) -> None:
    """What came in since the last row goes into the log, as the listener's flush stores it."""
    live, _ = commit(sid, lambda live: Change())
    flood.steps.append(live.step_count)


def build(sid: str, flood: Flood) -> Flood:
    listen(sid)
    conns = itertools.count(1)
    live = load(sid)
    with CACHE.lock(sid):
        admin = SessionClient(live, "admin-" + "a" * flood.client_id_chars, conns)
        admin.call(1, API_VERSIONS, 3, {"client_software_name": "x" * 2000, "client_software_version": "9" * 2000})
        topics = [{"name": flood.topic, "num_partitions": flood.partitions, "replication_factor": 3, "assignments": []}]
        answer = admin.call(1, CREATE_TOPICS, 5, {"topics": topics, "timeout": 30000})
        assert answer.topics[0].error_code.value == 0, answer
    _row(sid, flood)
    _open_transactions(sid, flood, conns)
    _transactions(sid, flood, conns)
    _plain_producers(sid, flood, conns)
    _consumers(sid, flood, conns)
    return flood


def _coordinator(core: Any, txid: str) -> int:
    return int(core.cluster.txn_coordinator.coordinator_of(txid))


def _leader(core: Any, tp: str) -> int:
    return int(core.cluster.leader_of(tp))


def _init(producer: SessionClient, txid: str) -> tuple[int, int]:
    body = {"transactional_id": txid, "transaction_timeout": 900_000, "producer_id": -1, "producer_epoch": -1}
    answer = producer.call(_coordinator(producer.core, txid), INIT_PID, 4, body)
    assert answer.error_code.value == 0, answer
    return answer.producer_id, answer.producer_epoch


def _add(producer: SessionClient, txid: str, pid: int, epoch: int, topic: str, parts: list[int]) -> None:
    for _attempt in range(50):  # the last transaction's markers first (CONCURRENT_TRANSACTIONS meanwhile)
        added = producer.call(
            _coordinator(producer.core, txid),
            ADD_PARTITIONS,
            3,
            {
                "v3_and_below_transactional_id": txid,
                "v3_and_below_producer_id": pid,
                "v3_and_below_producer_epoch": epoch,
                "v3_and_below_topics": [{"name": topic, "partitions": sorted(set(parts))}],
            },
        )
        codes = {
            r.partition_error_code.value for t in added.results_by_topic_v3_and_below for r in t.results_by_partition
        }
        if codes != {51}:
            break
        producer.advance(20)
    assert codes == {0}, added


def _produce(producer: SessionClient, topic: str, p: int, data: bytes, txid: str | None, acks: int = -1) -> None:
    answer = producer.call(_leader(producer.core, f"{topic}-{p}"), PRODUCE, 9, produce_body(topic, p, data, txid, acks))
    assert answer.responses[0].partition_responses[0].error_code.value == 0, answer


def _open_transactions(sid: str, flood: Flood, conns: itertools.count) -> None:
    """Producers whose 10 KB transactional ids differ only at their end, each leaving a transaction open on a
    partition of its own: the LSO of those partitions stays at their record, far behind the flood that follows."""
    live = load(sid)
    with CACHE.lock(sid):
        for i in range(flood.open_txns):
            txid = "O" * (flood.txid_chars - 4) + f"{i:04d}"
            producer = SessionClient(live, f"holder-{i}-" + "h" * flood.client_id_chars, conns)
            pid, epoch = _init(producer, txid)
            p = i % flood.partitions
            _add(producer, txid, pid, epoch, flood.topic, [p])
            _produce(producer, flood.topic, p, batch([b"held %d" % i], pid=pid, epoch=epoch, seq=0, txn=True), txid)
    _row(sid, flood)


def _transactions(sid: str, flood: Flood, conns: itertools.count) -> None:
    """One producer of a 10 KB transactional id (and a right-to-left override at its end) writing `batches` big
    records, a batch per request, in transactions of `txn_batches`: every third one aborted."""
    live = load(sid)
    txid = "T" * (flood.txid_chars - 4) + "\u202e<b>"
    sequences: dict[int, int] = {}
    with CACHE.lock(sid):
        producer = SessionClient(live, "flooder-" + "f" * flood.client_id_chars, conns)
        pid, epoch = _init(producer, txid)
    sent = n_txn = 0
    while sent < flood.batches:
        with CACHE.lock(sid):
            parts = [(sent + i) % flood.partitions for i in range(min(flood.txn_batches, flood.batches - sent))]
            _add(producer, txid, pid, epoch, flood.topic, parts)
            for p in parts:
                head = f"{sent:06d} ".encode()
                value = head + (MARKUP.encode() if sent % 7 == 0 else b"\xff\xfe\x00" if sent % 5 == 0 else b"v")
                value += b"0123456789" * ((flood.value_bytes - len(value)) // 10)
                seq = sequences.get(p, 0)
                sequences[p] = seq + 1
                _produce(producer, flood.topic, p, batch([value], pid=pid, epoch=epoch, seq=seq, txn=True), txid)
                sent += 1
            n_txn += 1
            body = {"transactional_id": txid, "producer_id": pid, "producer_epoch": epoch, "committed": n_txn % 3 != 0}
            assert producer.call(_coordinator(producer.core, txid), END_TXN, 3, body).error_code.value == 0
        if n_txn % max(1, flood.per_row // (flood.txn_batches + 2)) == 0:
            _row(sid, flood)
    _row(sid, flood)


def _plain_producers(sid: str, flood: Flood, conns: itertools.count) -> None:
    live = load(sid)
    for i in range(flood.plain_clients):
        with CACHE.lock(sid):
            client_id = f"app-{i:04d}-" + "c" * flood.client_id_chars
            plain = SessionClient(live, client_id, conns)
            p = i % flood.partitions
            key, value = b"\x80\x81" + bytes([i % 256]), b"\xc3\x28 not utf-8 " + bytes(range(256))
            _produce(plain, flood.topic, p, records_batch(key, value), None, acks=1)
        if (i + 1) % flood.per_row == 0:
            _row(sid, flood)
    _row(sid, flood)


def more(sid: str, flood: Flood, client_id: str = "late-writer") -> None:
    """A row more: a client that writes a record to every partition (each strip of the page changes)."""
    live = load(sid)
    with CACHE.lock(sid):
        writer = SessionClient(live, client_id, itertools.count(1_000_000 + len(flood.steps) * 1000))
        for p in range(flood.partitions):
            _produce(writer, flood.topic, p, records_batch(b"k", b"late \xe2\x80\xae value"), None, acks=1)
    _row(sid, flood)


def records_batch(key: bytes, value: bytes) -> bytes:
    from playground.protocol import records

    return records.encode_batch([records.Record(0, 0, key, value)], producer_id=-1, producer_epoch=-1, base_sequence=-1)


def _consumers(sid: str, flood: Flood, conns: itertools.count) -> None:
    """Consumers of both isolation levels reading every partition from the start (a Fetch per leader), and offsets
    committed under many groups."""
    live = load(sid)
    for i in range(flood.consumers):
        with CACHE.lock(sid):
            reader = SessionClient(live, f"reader-{i}-" + "r" * flood.client_id_chars, conns)
            core = reader.core
            for p in range(flood.partitions):
                body = fetch_body(flood.topic, p, 0, committed=i % 2 == 0)
                body["max_bytes"] = body["topics"][0]["partitions"][0]["partition_max_bytes"] = 150_000
                reader.call(_leader(core, f"{flood.topic}-{p}"), FETCH, 11, body)
        _row(sid, flood)
    with CACHE.lock(sid):
        committer = SessionClient(live, "committer", conns)
        for g in range(flood.groups):
            group = f"group-{g:04d}-" + "g" * flood.client_id_chars
            topics = [{"name": flood.topic, "partitions": [{"partition_index": 0, "committed_offset": g}]}]
            body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "topics": topics}
            committer.call(_group_coordinator(core, group), OFFSET_COMMIT, 8, body)
    _row(sid, flood)


def _group_coordinator(core: Any, group: str) -> int:
    return int(core.cluster.groups.coordinator_of(group))
