"""The clients of the protocol server as actors: who connected (its client.id, and the library and version its
ApiVersions named), what it is (a producer instance, a consumer, an admin client), its transactional id, producer id
and epoch, its group and member id, what it sent and what it was answered (issue 16: a session shows an application
it does not run the way it shows its own producers and consumers).

Follows what the requests carry, as Kafka defines them (clients/src/main/resources/common/message/*.json): the request
header's client.id, ApiVersionsRequest's ClientSoftwareName/Version (v3+), InitProducerIdRequest's TransactionalId,
the RecordBatch's ProducerId/ProducerEpoch (DefaultRecordBatch), the group requests' GroupId and MemberId, and the
answers the core sends (InitProducerIdResponse's ProducerId/ProducerEpoch, EndTxnResponse's on transaction.version 2).

Instances. A client opens a connection per broker, and nothing on the wire says which connections belong to one
client; two instances of an application often share a client.id (librdkafka's "rdkafka", kafka-clients'
"producer-<transactional id>"). So a connection belongs to an actor once one of its requests says whose it is:
- InitProducerId on a connection of no actor starts a producer instance (or, with a producer id and epoch, KIP-360,
  continues the instance that holds them); Produce, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit
  belong to the instance holding their producer id and epoch (a fenced zombie keeps its old epoch, so its requests
  stay its own). A Produce of producer id -1 (no idempotence) belongs to the plain producer of its client.id.
- the membership requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) and OffsetCommit belong to the consumer
  holding their member id (or group.instance.id) in that group; a JoinGroup without one (a new member) to a consumer
  of that client.id and group that is no member now, else to a new instance: two instances of one client.id are two
  consumers. A Fetch or ListOffsets belongs to the member of that client.id whose assignment (its SyncGroup answer)
  holds the partitions it names, else to the consumer of that client.id (a consumer without a group is made by its
  first Fetch).
- the admin APIs (CreateTopics, DescribeTransactions, ...) to the admin client of that client.id.
- a group's offsets (OffsetFetch, OffsetCommit) are asked by consumers and by admin clients alike (KafkaAdminClient's
  listConsumerGroupOffsets and alterConsumerGroupOffsets send them): a member asks them over its coordinator
  connection, bound by its JoinGroup, so on a connection of no actor they belong to a consumer of that client.id that
  is no member (an assign()ed one); else to an admin client, until a request only a consumer sends (a membership
  request, a Fetch no member's assignment explains) comes from that client.id, which makes it the consumer it was (an
  assign()ed consumer asks its committed offsets before its first Fetch). An admin client sharing a consumer's
  client.id stays an admin client. What a connection does decides, never its name.
Connections that only ask ApiVersions, Metadata or FindCoordinator belong to nobody. An actor is connected while one
of its connections is open. Names are the client.id, with "#2", "#3", ... for a second instance of the same one.

What each did is kept as a history of operations (`ops`), in the anomaly checker's terms (a producer's
init_transactions, begin_transaction, produce, commit_transaction, ...; a consumer's poll with what it read), each
tagged with the session log position (`position`) whose inputs caused it: the checker reads them beside the session's
own steps, and a session saved as a scenario is written from them. A group member's positions are those of the
partitions its last SyncGroup answer assigned it, and what it received is what its application was given (given.py).

Pure and deterministic (no clock, no I/O): updated by the core from the requests it reads and the answers it sends.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from playground.engine.values import identity
from playground.protocol import records
from playground.sim.groupview import assigned_partitions
from playground.simserver.clientreads import (
    delivered,
    fetch_offsets,
    group_of,
    member_of,
    next_offset,
    partitions_named,
    producer_of,
    sent_records,
    txn_producer,
    written,
)
from playground.simserver.given import Given

PRODUCER, CONSUMER, ADMIN = "producer", "consumer", "admin"
# Answers that mean the producer was fenced: another instance took its transactional id (what the application is
# told of it, in its library's words: told_of).
FENCING_ERRORS = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})
# The two requests of kafka-clients that race when an application sends and sends its offsets at once (race_endings)
RACING_REQUESTS = frozenset({"AddPartitionsToTxn", "AddOffsetsToTxn"})
# Answers a client retries on its own as part of the protocol's normal course: not worth a mark in the session's log.
ROUTINE_ERRORS = frozenset(
    {
        "CONCURRENT_TRANSACTIONS",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "NOT_LEADER_OR_FOLLOWER",
        "LEADER_NOT_AVAILABLE",
        "MEMBER_ID_REQUIRED",
        "REBALANCE_IN_PROGRESS",
        "UNKNOWN_TOPIC_OR_PARTITION",
        "UNSTABLE_OFFSET_COMMIT",
        "FETCH_SESSION_ID_NOT_FOUND",
        "OFFSET_OUT_OF_RANGE",
        "UNKNOWN_LEADER_EPOCH",
        "FENCED_LEADER_EPOCH",
        "NETWORK_EXCEPTION",
    }
)
ADMIN_APIS = frozenset(
    {
        "CreateTopics",
        "DeleteTopics",
        "DescribeConfigs",
        "DescribeTransactions",
        "ListTransactions",
        "DescribeProducers",
        "DescribeGroups",
        "ListGroups",
        "DeleteGroups",
        "WriteTxnMarkers",
        "DescribeCluster",
        "AlterConfigs",
        "IncrementalAlterConfigs",
        "CreatePartitions",
        "DeleteRecords",
        "OffsetDelete",
    }
)
MEMBERSHIP_APIS = frozenset({"JoinGroup", "SyncGroup", "Heartbeat", "LeaveGroup"})
GROUP_OFFSET_APIS = frozenset({"OffsetCommit", "OffsetFetch"})
GROUP_APIS = MEMBERSHIP_APIS | GROUP_OFFSET_APIS
TXN_APIS = frozenset({"AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit"})
OPS_MAX = 5000  # operations kept (the anomaly checker and a saved scenario read them)
# A produce operation keeps a record's value as engine/values.py's `identity` gives it (whole up to 1,024 characters:
# a finding quotes it, a saved scenario writes it): the log holds the records themselves, and five thousand
# operations of 100 KB values would hold 500 MB.


class Actor:
    """One external client, as the session shows it."""

    __slots__ = (
        "assignment",
        "client_id",
        "committed",
        "conns",
        "epochs",
        "fence",
        "fenced",
        "first_ms",
        "first_n",
        "fresh",
        "given",
        "group_id",
        "in_transaction",
        "instance_id",
        "isolation",
        "kind",
        "landed",
        "last_error",
        "last_ms",
        "member_id",
        "name",
        "open_records",
        "positions",
        "producer_epoch",
        "producer_id",
        "rejected",
        "requests",
        "sent",
        "software",
        "syncs",
        "tentative",
        "topics",
        "transactional_id",
    )

    def __init__(self, name: str, kind: str, client_id: str | None, now_ms: int) -> None:
        self.name = name
        self.kind = kind
        self.client_id = client_id
        self.software: tuple[str, str] | None = None
        # an admin client made by a group's offsets alone: the consumer it may yet turn out to be (see the module)
        self.tentative = False
        self.transactional_id: str | None = None
        self.producer_id: int | None = None
        self.producer_epoch: int | None = None
        self.epochs: set[tuple[int, int]] = set()  # every (producer id, epoch) this instance was given
        self.in_transaction = False
        self.fenced = False
        # the first fence this instance was answered on AddPartitionsToTxn or AddOffsetsToTxn: which of the two
        # (the race of issue 31 item 6, see race_endings) and the log position and time it came at
        self.fence: dict[str, Any] | None = None
        self.last_error: dict[str, str] | None = None
        self.group_id: str | None = None
        self.member_id: str | None = None
        self.isolation: str | None = None
        self.topics: set[str] = set()
        self.conns: set[int] = set()
        self.first_ms = self.last_ms = now_ms
        self.first_n = 0  # the session log position whose inputs made it
        self.requests = 0
        self.sent = 0  # records in its Produce requests
        self.landed = 0  # of those, appended to a partition's log
        self.rejected = 0  # refused by the leader
        self.committed = 0  # appended in transactions it committed (or without a transaction)
        self.open_records = 0  # appended in its open transaction
        self.instance_id: str | None = None  # group.instance.id (KIP-345)
        self.positions: dict[str, int] = {}
        self.given = Given()  # what its application was given (given.py)
        # a group member's partitions, as its last SyncGroup answer assigned them (None: not a member: assign()ed)
        self.assignment: frozenset[str] | None = None
        self.syncs = 0  # SyncGroup answers it had: a Fetch sent before the last one is stale
        self.fresh: set[str] = set()  # partitions not fetched since the last SyncGroup answer

    @property
    def connected(self) -> bool:
        return bool(self.conns)

    @property
    def state(self) -> str:
        """The client's state as far as its requests tell (the cards' words)."""
        if self.fenced:
            return "FENCED"
        if not self.conns:
            return "DISCONNECTED"
        if self.kind == PRODUCER:
            if self.producer_id is None:
                return "INIT"
            return "IN_TRANSACTION" if self.in_transaction else "READY"
        return "RUNNING"

    def view(self) -> dict[str, Any]:
        """How the session's view shows it (the backend view's producer or consumer entry, plus `external`)."""
        software = {"library": self.software[0], "version": self.software[1]} if self.software else None
        external = {
            "client_id": self.client_id,
            "software": software,
            "connected": self.connected,
            "requests": self.requests,
            "first_ms": self.first_ms,
            "last_ms": self.last_ms,
            "member_id": self.member_id,
            "instance_id": self.instance_id,
            "assignment": sorted(self.assignment) if self.assignment is not None else None,
        }
        if self.kind == CONSUMER:
            return {
                "isolation_level": self.isolation or "read_uncommitted",
                "group_id": self.group_id,
                "topics": sorted(self.topics),
                "state": self.state,
                "positions": dict(sorted(self.positions.items())),
                "received": {
                    tp: [{"offset": o, "value": None} for o in offs] for tp, offs in self.given.recent.items() if offs
                },
                "received_total": self.given.total,
                "last_error": self.last_error,
                "external": external,
            }
        return {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "epoch": self.producer_epoch,
            "state": self.state,
            "last_error": self.last_error,
            "fenced": self.fenced,
            # what the application sent, what landed, what a read_committed consumer gets: the broker's side of the
            # app's view (an external application's own beliefs are not on the wire)
            "counters": {"app_sent_ok": self.sent, "landed": self.landed, "read_committed_received": self.committed},
            "queued": 0,
            "fatal_error": "PRODUCER_FENCED" if self.fenced else None,
            "client": _library(self.software),
            "external": {**external, "rejected": self.rejected, "kind": self.kind},
        }


def _settle_as_consumer(actor: Actor) -> None:
    actor.kind, actor.tentative = CONSUMER, False


# The request an operation of the checker's comes from (transaction_failed names its own).
_REQUEST_OF = {
    "produce": "Produce",
    "commit_transaction": "EndTxn",
    "abort_transaction": "EndTxn",
    "send_offsets_to_transaction": "TxnOffsetCommit",
    "init_transactions": "InitProducerId",
}


def told_of(library: str, request: str, error: str, software: tuple[str, str] | None = None) -> str:
    """What a fence answered to `request` tells the application, in its client library's words.

    librdkafka makes INVALID_PRODUCER_EPOCH and PRODUCER_FENCED on a transactional producer the fatal error _FENCED
    (rdkafka_request.c, rdkafka_txnmgr.c: "fencing normalised"; sim/rdkafka_base.py). kafka-clients: the Sender gives
    a Produce's INVALID_PRODUCER_EPOCH as InvalidProducerEpochException; every TxnRequestHandler turns either answer
    into ProducerFencedException (TransactionManager.java), except TxnOffsetCommit's INVALID_PRODUCER_EPOCH in 3.5,
    before KAFKA-14278, passed on as it came (sim/java_txnmgr.py)."""
    if library != "java":
        return "_FENCED"
    if error == "INVALID_PRODUCER_EPOCH":
        version = software[1] if software else ""
        if request == "Produce" or (request == "TxnOffsetCommit" and version.startswith("3.5")):
            return "InvalidProducerEpochException"
    return "ProducerFencedException"


def _library(software: tuple[str, str] | None) -> str:
    name = (software[0] if software else "").lower()
    return "java" if "java" in name or name.startswith("apache-kafka") else "librdkafka"


class Clients:
    """The actors of every connection of a core (see the module's docstring). `reserved`: names taken already (a
    session's own actors)."""

    def __init__(self, reserved: Iterable[str] = (), topic_of: Callable[[Any], str | None] = lambda _id: None) -> None:
        self.topic_of = topic_of  # a topic id's name (Fetch v13+ names topics by id)
        self.fetch_tags: dict[int, int] = {}  # connection -> its Fetch in hand was sent after this many SyncGroups
        self.answer_tag: int | None = None  # the answered Fetch's (while its answer is read)
        self.actors: dict[str, Actor] = {}
        self.by_conn: dict[int, str] = {}
        self.reserved = set(reserved)
        self.ops: deque[dict[str, Any]] = deque(maxlen=OPS_MAX)
        self.position = 0  # the session log position whose inputs are being handled

    # ------------------------------------------------------------------------------------------------ naming
    def _new(self, kind: str, client_id: str | None, now_ms: int) -> Actor:
        base = client_id or "client"
        name, n = base, 1
        while name in self.actors or name in self.reserved:
            n += 1
            name = f"{base}#{n}"
        actor = self.actors[name] = Actor(name, kind, client_id, now_ms)
        actor.first_n = self.position
        return actor

    def _bind(self, conn: Any, actor: Actor) -> Actor:
        self.by_conn[conn.conn_id] = actor.name
        actor.conns.add(conn.conn_id)
        if conn.software is not None:
            actor.software = conn.software
        return actor

    def of(self, conn_id: int) -> Actor | None:
        name = self.by_conn.get(conn_id)
        return self.actors.get(name) if name is not None else None

    def label(self, conn: Any) -> str | None:
        actor = self.of(conn.conn_id)
        return actor.name if actor is not None else None

    def _holding(self, pid: int, epoch: int) -> Actor | None:
        for actor in self.actors.values():
            if (pid, epoch) in actor.epochs:
                return actor
        return None

    def _first(self, kind: str, client_id: str | None, **match: Any) -> Actor | None:
        found = None
        for actor in self.actors.values():
            if (
                actor.kind == kind
                and actor.client_id == client_id
                and all(getattr(actor, k) == v for k, v in match.items())
            ):
                if actor.conns:
                    return actor
                found = found or actor
        return found

    # ------------------------------------------------------------------------------------------------ requests
    def request(self, conn: Any, request: Any, now_ms: int) -> None:
        """A request is about to be handled: whose connection it is, when that is what it tells."""
        actor = self.of(conn.conn_id)
        if actor is None:
            actor = self._owner(conn, request, now_ms)
        if actor is None:
            return
        if actor.tentative:
            if request.name in ADMIN_APIS:
                actor.tentative = False  # an admin client for certain
            elif request.name in MEMBERSHIP_APIS or request.name == "Fetch":
                _settle_as_consumer(actor)
        actor.requests += 1
        actor.last_ms = now_ms
        if request.name == "Fetch":
            self.fetch_tags[conn.conn_id] = actor.syncs
        if conn.software is not None and actor.software is None:
            actor.software = conn.software

    def _owner(self, conn: Any, request: Any, now_ms: int) -> Actor | None:
        name, body, client_id = request.name, request.body, request.client_id
        actor: Actor | None = None
        if name == "InitProducerId":
            pid = int(getattr(body, "producer_id", -1))
            epoch = int(getattr(body, "producer_epoch", -1))
            txid = body.transactional_id
            if pid >= 0:
                actor = self._holding(pid, epoch)
            if actor is None:
                # a retry of an InitProducerId that never got its answer (the coordinator moved) is the same instance
                for candidate in self.actors.values():
                    if (
                        candidate.kind == PRODUCER
                        and candidate.client_id == client_id
                        and candidate.transactional_id == txid
                        and candidate.producer_id is None
                    ):
                        actor = candidate
                        break
            if actor is None:
                actor = self._new(PRODUCER, client_id, now_ms)
                actor.transactional_id = txid
        elif name == "Produce":
            batch_pid, batch_epoch = producer_of(body)
            if batch_pid is None:
                return None
            if batch_pid >= 0:
                actor = self._holding(batch_pid, batch_epoch)
            else:
                actor = self._first(PRODUCER, client_id, producer_id=None)
            if actor is None:
                actor = self._new(PRODUCER, client_id, now_ms)
        elif name in TXN_APIS:
            txn_pid, txn_epoch = txn_producer(name, body)
            actor = self._holding(txn_pid, txn_epoch) if txn_pid is not None else None
        elif name in GROUP_APIS:
            group = group_of(body)
            if group is None:
                return None
            member_id, instance_id = member_of(body)
            actor = self._member(group, member_id, instance_id)
            if actor is None and not member_id:
                # a new member (JoinGroup), or an offset request of a consumer that is no member (assign()ed)
                actor = self._no_member(client_id, group)
            if actor is None and name in GROUP_OFFSET_APIS:
                actor = self._first(ADMIN, client_id)
                if actor is None:
                    actor = self._new(ADMIN, client_id, now_ms)
                    actor.tentative = True
            if actor is None:
                actor = self._tentative(client_id) or self._new(CONSUMER, client_id, now_ms)
            actor.group_id = group
        elif name in ("Fetch", "ListOffsets"):
            tps = partitions_named(name, body, self.topic_of)
            actor = self._assigned(client_id, tps) or self._no_member(client_id, None, any_group=True)
            if actor is None and name == "Fetch":
                actor = self._tentative(client_id) or self._first(CONSUMER, client_id)
                actor = actor or self._new(CONSUMER, client_id, now_ms)
        elif name in ADMIN_APIS:
            actor = self._first(ADMIN, client_id) or self._new(ADMIN, client_id, now_ms)
        if actor is None:
            return None
        return self._bind(conn, actor)

    def _member(self, group: str, member_id: str, instance_id: str | None) -> Actor | None:
        """The consumer holding this member id (or, for a static member's new member id, group.instance.id)."""
        for actor in self.actors.values():
            if actor.kind != CONSUMER or actor.group_id != group:
                continue
            if (member_id and actor.member_id == member_id) or (instance_id and actor.instance_id == instance_id):
                return actor
        return None

    def _no_member(self, client_id: str | None, group: str | None, any_group: bool = False) -> Actor | None:
        """A consumer of this client.id (and group, or none yet) that is no member of a group now: never joined
        (assign()ed), or its connections all closed (the same application started again)."""
        found = None
        for actor in self.actors.values():
            if actor.kind != CONSUMER or actor.client_id != client_id:
                continue
            if not any_group and actor.group_id not in (group, None):
                continue
            if actor.member_id is None:
                if actor.conns:
                    return actor
                found = found or actor
            elif not actor.conns and group is not None:
                found = found or actor
        return found

    def _assigned(self, client_id: str | None, tps: set[str]) -> Actor | None:
        """The member of this client.id whose assignment holds these partitions: the instance that fetches them."""
        if not tps:
            return None
        for actor in self.actors.values():
            if (
                actor.kind == CONSUMER
                and actor.client_id == client_id
                and actor.conns
                and tps <= (actor.assignment or frozenset())
            ):
                return actor
        return None

    def _tentative(self, client_id: str | None) -> Actor | None:
        """The admin client of this client.id that only asked a group's offsets so far, now a consumer: a request only
        a consumer sends came from its client.id."""
        actor = self._first(ADMIN, client_id, tentative=True)
        if actor is not None:
            _settle_as_consumer(actor)
        return actor

    def closed(self, conn_id: int) -> None:
        self.fetch_tags.pop(conn_id, None)
        name = self.by_conn.pop(conn_id, None)
        if name is not None and name in self.actors:
            self.actors[name].conns.discard(conn_id)

    # ------------------------------------------------------------------------------------------------ answers
    def answered(self, core: Any, conn: Any, request: Any, data: Mapping[str, Any] | None, error: str | None) -> None:
        """The core answered a request (data None: acks=0, nothing is sent back)."""
        actor = self.of(conn.conn_id)
        if actor is None:
            return
        now_ms = core.now_ms
        actor.last_ms = now_ms
        name = request.name
        if error is not None and error not in ROUTINE_ERRORS:
            actor.last_error = {"op": name, "error": error}
        # a fence answered to a producer inside a transaction ends that transaction for its client (kafka-clients and
        # librdkafka make it fatal): the application learns it at its next call, the commit included, without
        # another request on the wire. EndTxn says so with its own operation.
        failed = error in FENCING_ERRORS and actor.kind == PRODUCER and actor.in_transaction and name != "EndTxn"
        if error in FENCING_ERRORS and actor.kind == PRODUCER:
            actor.fenced = True
            actor.in_transaction = False
            if name in RACING_REQUESTS and actor.fence is None:
                actor.fence = {"request": name, "n": self.position, "t": now_ms}
        handler = _ANSWERS.get(name)
        self.answer_tag = self.fetch_tags.pop(conn.conn_id, None) if name == "Fetch" else None
        if handler is not None:
            handler(self, core, actor, request, data or {}, error)
        if failed:
            self._op(actor, "transaction_failed", error, now_ms, args={"request": name})

    def _op(self, actor: Actor, action: str, outcome: str | None, t_ms: int, **extra: Any) -> None:
        if outcome in ROUTINE_ERRORS:
            return  # the client tries again: its next answer is the one that counts
        op: dict[str, Any] = {"n": self.position, "actor": actor.name, "action": action, "args": {}, "t": t_ms}
        op["outcome"] = outcome or "ok"
        if actor.kind == PRODUCER:
            # the checker says what the application was told in its own client's words, not the broker's answer
            op["client"] = _library(actor.software)
            if outcome in FENCING_ERRORS:
                request = str(extra.get("args", {}).get("request") or _REQUEST_OF.get(action, ""))
                op["told"] = told_of(op["client"], request, outcome, actor.software)
        op.update(extra)
        self.ops.append(op)

    def _init(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        if error is None:
            pid, epoch = int(data.get("producer_id", -1)), int(data.get("producer_epoch", -1))
            if actor.transactional_id and actor.in_transaction:
                actor.open_records = 0  # the open transaction was aborted by the re-initialisation
            actor.producer_id, actor.producer_epoch = pid, epoch
            actor.epochs.add((pid, epoch))
            actor.fenced = False
            actor.in_transaction = False
        if actor.transactional_id:
            self._op(actor, "init_transactions", error, core.now_ms)

    def _add_partitions(
        self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None
    ) -> None:
        if not actor.in_transaction and error is None:
            actor.in_transaction = True
            actor.open_records = 0
            self._op(actor, "begin_transaction", None, core.now_ms)

    def _produce(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        body = request.body
        results: dict[tuple[Any, int], Mapping[str, Any]] = {}
        for topic in data.get("responses", ()):
            key = topic.get("topic_id", topic.get("name"))
            for part in topic.get("partition_responses", ()):
                results[(key, int(part["index"]))] = part
        version = request.api_version
        for topic in body.topic_data:
            key = getattr(topic, "topic_id", None) if version >= 13 else getattr(topic, "name", None)
            name = core.topic_of(key) if version >= 13 else key
            for part in topic.partition_data:
                found = records.read_batches(part.records or b"")
                count = sum(b.record_count for b in found)
                if name:
                    actor.topics.add(name)
                answer = results.get((key, int(part.index)))
                part_error = answer.get("error_code") if answer is not None else None
                if part_error in ROUTINE_ERRORS:
                    continue  # sent again once the client knows where (counted then)
                actor.sent += count
                if answer is None:  # acks=0: nobody is told anything
                    continue
                tp = f"{name}-{int(part.index)}"
                if part_error:
                    actor.rejected += count
                    for key_value in sent_records(found, 100):
                        args = {"topic": name, "partition": int(part.index), "value": identity(key_value[1])}
                        if key_value[0] is not None:
                            args["key"] = identity(key_value[0])
                        self._op(actor, "produce", part_error, core.now_ms, args=args)
                    continue
                actor.landed += count
                if actor.in_transaction and any(b.transactional for b in found):
                    actor.open_records += count
                else:
                    actor.committed += count
                base = int(answer.get("base_offset", -1))
                for offset, key_value in written(core, tp, base, count):
                    args = {"topic": name, "partition": int(part.index), "value": identity(key_value[1])}
                    if key_value[0] is not None:
                        args["key"] = identity(key_value[0])
                    self._op(actor, "produce", None, core.now_ms, args=args, offset=offset)

    def _end_txn(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        commit = bool(request.body.committed)
        if error is None:
            if commit:
                actor.committed += actor.open_records
            actor.open_records = 0
            actor.in_transaction = False
            epoch = int(data.get("producer_epoch", -1))
            if epoch >= 0 and actor.producer_id is not None:  # transaction.version 2 bumps the epoch every time
                pid = int(data.get("producer_id", actor.producer_id))
                actor.producer_id, actor.producer_epoch = pid, epoch
                actor.epochs.add((pid, epoch))
        self._op(actor, "commit_transaction" if commit else "abort_transaction", error, core.now_ms)

    def _txn_offsets(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        """TxnOffsetCommit: the offsets themselves are kept, by partition as the request named them (by id from v6 on,
        KIP-1319): they say which inputs the transaction consumed, and a saved scenario writes them."""
        body = request.body
        offsets: dict[str, int] = {}
        for topic in getattr(body, "topics", None) or ():
            topic_id = getattr(topic, "topic_id", None)
            name = getattr(topic, "name", None) or core.topic_of(topic_id) or str(topic_id)
            for part in topic.partitions:
                offsets[f"{name}-{int(part.partition_index)}"] = int(part.committed_offset)
        args = {"group": body.group_id, "offsets": offsets}
        self._op(actor, "send_offsets_to_transaction", error, core.now_ms, args=args)

    def _join(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        # KIP-394: a new member's first JoinGroup is answered MEMBER_ID_REQUIRED with the id it joins again with
        if error in (None, "MEMBER_ID_REQUIRED") and data.get("member_id"):
            actor.member_id = str(data["member_id"])
        instance_id = getattr(request.body, "group_instance_id", None)
        if instance_id:
            actor.instance_id = str(instance_id)

    def _sync(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        """SyncGroup's answer is the member's assignment: it fetches these partitions from now on, and forgets the
        others' positions (the client revoked them)."""
        if error is None:
            self._reassigned(actor, frozenset(assigned_partitions(bytes(data.get("assignment") or b""))))

    def _leave(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        if error is None:
            self._reassigned(actor, frozenset())

    def _reassigned(self, actor: Actor, assignment: frozenset[str]) -> None:
        actor.assignment = assignment
        actor.syncs += 1
        actor.fresh = set(assignment) | set(actor.given.runs)
        actor.positions = {tp: o for tp, o in actor.positions.items() if tp in assignment}

    def _took_over(self, actor: Actor, tp: str, from_offset: int) -> set[int]:
        """`actor`'s first Fetch of `tp` since its SyncGroup answer, from `from_offset`: what the group fetched before
        the rebalance from there on was dropped by the clients that had it (given.py). The actor's own offsets
        taken back."""
        actor.fresh.discard(tp)
        for other in self.actors.values():
            if (
                other is not actor
                and other.kind == CONSUMER
                and other.group_id == actor.group_id
                and other.assignment is not None
                and tp not in other.assignment
            ):
                other.given.take_back(tp, from_offset)
        return actor.given.take_back(tp, from_offset, before_tag=actor.syncs)

    def _offset_commit(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        self._op(actor, "commit", error, core.now_ms)

    def _fetch(self, core: Any, actor: Actor, request: Any, data: Mapping[str, Any], error: str | None) -> None:
        rc = int(getattr(request.body, "isolation_level", 0)) == 1
        actor.isolation = "read_committed" if rc else "read_uncommitted"
        offsets = fetch_offsets(request, core)
        tag = self.answer_tag if self.answer_tag is not None else actor.syncs
        stale = tag < actor.syncs  # sent before the member's last SyncGroup answer
        again: set[tuple[str, int]] = set()  # the actor's own records fetched again after a rebalance
        if not stale:
            for tp in actor.fresh & offsets.keys():
                again.update((tp, o) for o in self._took_over(actor, tp, offsets[tp]))
                actor.positions[tp] = offsets[tp]
        read: list[list[Any]] = []
        lso: dict[str, int] = {}
        for topic in data.get("responses", ()):
            key = topic.get("topic_id", topic.get("topic"))
            name = core.topic_of(key) if request.api_version >= 13 else key
            if not name or name.startswith("__"):
                continue
            actor.topics.add(name)
            for part in topic.get("partitions", ()):
                tp = f"{name}-{int(part['partition_index'])}"
                if stale and actor.assignment is not None and tp not in actor.assignment:
                    continue  # the client drops an answer for a partition it no longer has
                fetched = offsets.get(tp)
                if fetched is not None and tp not in actor.positions:
                    actor.positions[tp] = fetched
                raw = part.get("records") or b""
                if part.get("error_code") or not raw:
                    continue
                got = delivered(core, tp, raw, rc, part.get("aborted_transactions") or ())
                if fetched is not None:
                    # a batch is answered whole: the client skips its records before the offset it fetched from
                    # (kafka-clients' CompletedFetch, librdkafka's rd_kafka_msgset_reader)
                    got = [o for o in got if o >= fetched]
                nxt = next_offset(raw)
                if nxt is not None:
                    actor.positions[tp] = nxt
                if not got:
                    continue
                actor.given.add(tp, got, tag)
                read.extend([tp, o] for o in got if (tp, o) not in again)
                if rc and int(part.get("last_stable_offset", -1)) >= 0:
                    lso[tp] = int(part["last_stable_offset"])
        if read:
            extra: dict[str, Any] = {"read": read}
            if lso:
                extra["lso"] = lso
            self._op(actor, "poll", None, core.now_ms, **extra)

    # ------------------------------------------------------------------------------------------------ views
    def producers(self) -> dict[str, dict[str, Any]]:
        return {a.name: a.view() for a in self.actors.values() if a.kind == PRODUCER}

    def consumers(self) -> dict[str, dict[str, Any]]:
        return {a.name: a.view() for a in self.actors.values() if a.kind == CONSUMER}

    def admins(self) -> list[dict[str, Any]]:
        return [
            {
                "name": a.name,
                "client_id": a.client_id,
                "software": a.software,
                "connected": a.connected,
                "requests": a.requests,
            }
            for a in self.actors.values()
            if a.kind == ADMIN
        ]

    def software(self, conns: Iterable[Any]) -> list[dict[str, Any]]:
        """What connected, as the clients named themselves in ApiVersions (v3+: ClientSoftwareName/Version, asked on
        every connection): each library and version with how many clients of each kind use it, and how many open
        connections named it that belong to no client yet; in the order they first came."""
        found: dict[tuple[str, str], dict[str, Any]] = {}

        def entry(software: tuple[str, str]) -> dict[str, Any]:
            if software not in found:
                found[software] = {"library": software[0], "version": software[1], "kinds": {}, "unclaimed": 0}
            return found[software]

        for actor in self.actors.values():
            if actor.software is not None:
                kinds = entry(actor.software)["kinds"]
                kinds[actor.kind] = kinds.get(actor.kind, 0) + 1
        for conn in conns:
            if conn.software is not None and conn.conn_id not in self.by_conn:
                entry(conn.software)["unclaimed"] += 1
        return list(found.values())

    def groups(self) -> set[str]:
        return {a.group_id for a in self.actors.values() if a.group_id}

    def race_endings(self) -> list[dict[str, Any]]:
        """Which ending of the race between AddOffsetsToTxn and AddPartitionsToTxn each fenced kafka-clients producer
        took (issue 31 item 6). When an application sends to a partition new in its transaction and calls
        sendOffsetsToTransaction at once, its listener thread queues AddOffsetsToTxn and its Sender thread
        AddPartitionsToTxn, and the one queued first goes first (TransactionManager's pendingRequests, one
        priority for both). Fenced on AddOffsetsToTxn: sendOffsetsToTransaction threw ProducerFencedException at
        once ("offsets_first"). Fenced on AddPartitionsToTxn: the producer went fatal, and its Sender sends nothing
        more (Sender.runOnce), so an AddOffsetsToTxn queued behind it was neither sent nor failed and
        sendOffsetsToTransaction, if called, waited max.block.ms and threw TimeoutException ("partitions_first").
        librdkafka has other ways (its own queue, _FENCED from either): only kafka-clients is judged."""
        out = []
        for a in self.actors.values():
            if a.kind != PRODUCER or a.fence is None or _library(a.software) != "java":
                continue
            first = "offsets_first" if a.fence["request"] == "AddOffsetsToTxn" else "partitions_first"
            out.append({"actor": a.name, "transactional_id": a.transactional_id, "ending": first, **a.fence})
        return sorted(out, key=lambda e: (e["n"], e["actor"]))


_ANSWERS = {
    "InitProducerId": Clients._init,
    "AddPartitionsToTxn": Clients._add_partitions,
    # AddOffsetsToTxn adds the group's __consumer_offsets partition: a transaction whose offsets go first (librdkafka
    # sends them while its records' AddPartitionsToTxn waits) begins with it
    "AddOffsetsToTxn": Clients._add_partitions,
    "Produce": Clients._produce,
    "EndTxn": Clients._end_txn,
    "TxnOffsetCommit": Clients._txn_offsets,
    "JoinGroup": Clients._join,
    "SyncGroup": Clients._sync,
    "LeaveGroup": Clients._leave,
    "OffsetCommit": Clients._offset_commit,
    "Fetch": Clients._fetch,
}
