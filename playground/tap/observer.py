"""What the tap makes of the requests and answers it forwards, pure (fed decoded pairs; no sockets, no clock): each
connection (the client's address and port, client.id, the software it names in ApiVersions v3+, its transactional
ids, the producer ids and epochs it used over time, its groups, its last events), each producer *instance* (one
InitProducerId's answer: a transactional.id's producer id and epoch, wherever they are used next), and findings:

- `shared_transactional_id`: two instances of one transactional.id alive at once (the older one still sent, or had
  a transaction open, after the newer one's InitProducerId);
- `fence`: which connection's InitProducerId bumped the epoch under which another connection's transaction was open,
  and the error that instance got next (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, ..., by Kafka's names);
- `outside_transaction`: a topic written inside transactions by one producer and outside any by another connection.

Follows the transaction coordinator's rules (TransactionCoordinator.handleInitProducerId: a new InitProducerId for a
transactional.id bumps its epoch and aborts the open transaction of the instance before it; KIP-360: an instance that
sends its own producer id and epoch in InitProducerId keeps going under the new epoch; KIP-890 transaction.version 2:
EndTxn v5 answers with the epoch the instance continues under) and the producer's (TransactionManager: a transaction
is open from its first AddPartitionsToTxn / AddOffsetsToTxn, or transactional Produce, until EndTxn).

Memory is bounded: a connection keeps its last `max_events` events, a closed connection is forgotten once
`max_closed_connections` closed after it, and instances past `max_instances` are forgotten oldest first.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from playground.protocol.errors import error_name
from playground.protocol.messages import api_name
from playground.tap import wire

FENCING_ERRORS = frozenset({"PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"})
NO_PRODUCER = -1


@dataclass(frozen=True, slots=True)
class Event:
    """One request and its answer, as a connection's history keeps it."""

    at_ms: int
    api: str
    version: int
    detail: tuple[tuple[str, Any], ...]
    error: str | None  # the answer's first error, by Kafka's name; None when it had none (or had no answer)

    def to_json(self) -> dict[str, Any]:
        return {"at_ms": self.at_ms, "api": self.api, "version": self.version, **dict(self.detail), "error": self.error}


@dataclass
class ConnectionView:
    conn_id: int
    broker: int
    client_host: str
    client_port: int
    opened_ms: int
    max_events: int
    closed_ms: int | None = None
    client_id: str | None = None
    software: tuple[str, str] | None = None
    transactional_ids: set[str] = field(default_factory=set)
    producer: list[dict[str, Any]] = field(default_factory=list)  # producer id and epoch over time (changes only)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    events: deque[Event] = field(default_factory=deque)
    events_dropped: int = 0

    def add(self, event: Event) -> None:
        if len(self.events) >= self.max_events:
            self.events.popleft()
            self.events_dropped += 1
        self.events.append(event)

    def used(self, at_ms: int, transactional_id: str | None, producer_id: int, epoch: int, via: str) -> None:
        if transactional_id:
            self.transactional_ids.add(transactional_id)
        last = self.producer[-1] if self.producer else None
        if last is None or (last["producer_id"], last["epoch"]) != (producer_id, epoch):
            if len(self.producer) >= self.max_events:
                del self.producer[0]
            self.producer.append(
                {"at_ms": at_ms, "transactional_id": transactional_id, "producer_id": producer_id, "epoch": epoch,
                 "via": via}
            )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "connection": self.conn_id,
            "broker": self.broker,
            "client": f"{self.client_host}:{self.client_port}",
            "opened_ms": self.opened_ms,
            "closed_ms": self.closed_ms,
            "client_id": self.client_id,
            "software": None if self.software is None else {"name": self.software[0], "version": self.software[1]},
            "transactional_ids": sorted(self.transactional_ids),
            "producer": list(self.producer),
            "groups": self.groups,
            "requests": dict(sorted(self.requests.items())),
            "events": [e.to_json() for e in self.events],
            "events_dropped": self.events_dropped,
        }


@dataclass
class Instance:
    """A producer as the transaction coordinator knows it: what one InitProducerId's answer started."""

    number: int
    transactional_id: str | None
    producer_id: int
    epoch: int
    conn_id: int  # where its InitProducerId went
    started_ms: int
    conns: set[int] = field(default_factory=set)  # every connection its producer id and epoch were used on
    open_since_ms: int | None = None  # its transaction
    last_sent_ms: int = 0
    fenced_by: int | None = None
    fenced_ms: int | None = None
    open_when_fenced_ms: int | None = None
    sent_after_fence: bool = False
    error_after_fence: dict[str, Any] | None = None


class Observer:
    def __init__(self, *, max_events: int = 200, max_closed_connections: int = 1000, max_instances: int = 10_000):
        self.max_events = max_events
        self.max_closed_connections = max_closed_connections
        self.max_instances = max_instances
        self.conns: dict[int, ConnectionView] = {}
        self._closed: deque[int] = deque()
        self.instances: OrderedDict[int, Instance] = OrderedDict()
        self._by_epoch: dict[tuple[int, int], int] = {}  # (producer id, epoch) -> instance number
        self._by_txn: dict[str, list[int]] = {}  # transactional.id -> its instances, oldest first
        self._next_instance = 0
        # topic -> who wrote it inside transactions (instance numbers) and outside (connection ids)
        self._topics: dict[str, tuple[set[int], set[int]]] = {}

    # ------------------------------------------------------------------------------------------ connections
    def opened(self, conn_id: int, now_ms: int, broker: int, client_host: str, client_port: int) -> None:
        self.conns[conn_id] = ConnectionView(conn_id, broker, client_host, client_port, now_ms, self.max_events)

    def closed(self, conn_id: int, now_ms: int) -> None:
        view = self.conns.get(conn_id)
        if view is None or view.closed_ms is not None:
            return
        view.closed_ms = now_ms
        self._closed.append(conn_id)
        while len(self._closed) > self.max_closed_connections:
            self.conns.pop(self._closed.popleft(), None)

    # ------------------------------------------------------------------------------------------ exchanges
    def exchange(
        self, conn_id: int, now_ms: int, api_key: int, api_version: int, client_id: str | None, request: Any,
        response: Any,
    ) -> None:  # fmt: skip
        """A request and its answer (None: no answer, as Produce with acks=0, or the connection closed first).
        `request` is the kio body, or a wire.ProduceHead for Produce."""
        view = self.conns.get(conn_id)
        if view is None:
            return
        name = api_name(api_key)
        view.requests[name] = view.requests.get(name, 0) + 1
        if client_id is not None:
            view.client_id = client_id
        if request is None:
            return  # not an API the tap reads, or one it could not read (the broker judged it)
        if api_key == wire.API_VERSIONS:
            self._api_versions(view, request)
        elif api_key == wire.INIT_PRODUCER_ID:
            self._init_producer_id(view, now_ms, api_version, request, response)
        elif api_key == wire.PRODUCE:
            self._produce(view, now_ms, api_version, request, response)
        elif api_key in _TXN_APIS:
            self._txn_request(view, now_ms, api_key, api_version, request, response)
        elif api_key in _GROUP_APIS:
            self._group(view, now_ms, api_key, api_version, request, response)

    def _event(
        self, view: ConnectionView, now_ms: int, api_key: int, version: int, response: Any, **detail: Any
    ) -> str | None:
        error = first_error(response)
        view.add(Event(now_ms, api_name(api_key), version, tuple(detail.items()), error))
        return error

    def _api_versions(self, view: ConnectionView, request: Any) -> None:
        software = getattr(request, "client_software_name", None)
        if software:
            view.software = (software, getattr(request, "client_software_version", "") or "")

    # ------------------------------------------------------------------------------------------ producers
    def _init_producer_id(self, view: ConnectionView, now_ms: int, version: int, request: Any, response: Any) -> None:
        txn = request.transactional_id
        error = self._event(
            view, now_ms, wire.INIT_PRODUCER_ID, version, response, transactional_id=txn,
            producer_id=None if response is None else int(response.producer_id),
            epoch=None if response is None else int(response.producer_epoch),
        )  # fmt: skip
        if response is None or error is not None:
            return
        pid, epoch = int(response.producer_id), int(response.producer_epoch)
        view.used(now_ms, txn, pid, epoch, "InitProducerId")
        own = self._by_epoch.get((int(getattr(request, "producer_id", NO_PRODUCER)),
                                  int(getattr(request, "producer_epoch", -1))))  # fmt: skip
        if own is not None and own in self.instances:  # KIP-360: the same instance goes on under a new epoch
            self._move(self.instances[own], pid, epoch, conn_id=view.conn_id)
            return
        instance = self._new_instance(txn, pid, epoch, view.conn_id, now_ms)
        for number in self._by_txn.get(txn, []) if txn else []:
            older = self.instances.get(number)
            if older is None or older is instance or older.fenced_by is not None:
                continue
            older.fenced_by, older.fenced_ms, older.open_when_fenced_ms = instance.number, now_ms, older.open_since_ms
        if txn:
            self._by_txn.setdefault(txn, []).append(instance.number)

    def _new_instance(self, txn: str | None, pid: int, epoch: int, conn_id: int, now_ms: int) -> Instance:
        self._next_instance += 1
        instance = Instance(self._next_instance, txn, pid, epoch, conn_id, now_ms, {conn_id}, last_sent_ms=now_ms)
        self.instances[instance.number] = instance
        self._by_epoch[(pid, epoch)] = instance.number
        while len(self.instances) > self.max_instances:
            _, gone = self.instances.popitem(last=False)
            self._by_epoch.pop((gone.producer_id, gone.epoch), None)
            if gone.transactional_id in self._by_txn:
                self._by_txn[gone.transactional_id].remove(gone.number)
        return instance

    def _move(self, instance: Instance, pid: int, epoch: int, conn_id: int) -> None:
        self._by_epoch.pop((instance.producer_id, instance.epoch), None)
        instance.producer_id, instance.epoch = pid, epoch
        instance.conns.add(conn_id)
        self._by_epoch[(pid, epoch)] = instance.number

    def _sent(
        self, view: ConnectionView, now_ms: int, txn: str | None, pid: int, epoch: int, api: str
    ) -> Instance | None:
        """A request under this producer id and epoch: whose instance it is, and whether it came after its fence."""
        view.used(now_ms, txn, pid, epoch, api)
        number = self._by_epoch.get((pid, epoch))
        instance = self.instances.get(number) if number is not None else None
        if instance is None and txn and pid >= 0:
            # an instance whose InitProducerId the tap did not see (it started before the tap, or elsewhere)
            instance = self._new_instance(txn, pid, epoch, view.conn_id, now_ms)
            self._by_txn.setdefault(txn, []).append(instance.number)
        if instance is None:
            return None
        instance.conns.add(view.conn_id)
        instance.last_sent_ms = now_ms
        if instance.fenced_ms is not None and now_ms >= instance.fenced_ms:
            instance.sent_after_fence = True
        return instance

    def _answered(
        self, instance: Instance | None, view: ConnectionView, now_ms: int, api: str, error: str | None
    ) -> None:
        if instance is None or error is None or instance.fenced_by is None or instance.error_after_fence is not None:
            return
        instance.error_after_fence = {"connection": view.conn_id, "api": api, "error": error, "at_ms": now_ms}

    def _txn_request(
        self, view: ConnectionView, now_ms: int, api_key: int, version: int, request: Any, response: Any
    ) -> None:
        if api_key == wire.ADD_PARTITIONS_TO_TXN and version >= 4:
            entries = [(t.transactional_id, t.producer_id, t.producer_epoch) for t in request.transactions]
        else:
            prefix = "v3_and_below_" if api_key == wire.ADD_PARTITIONS_TO_TXN else ""
            entries = [
                tuple(getattr(request, prefix + f) for f in ("transactional_id", "producer_id", "producer_epoch"))
            ]
        detail: dict[str, Any] = {"transactional_id": entries[0][0], "producer_id": int(entries[0][1]),
                                  "epoch": int(entries[0][2])}  # fmt: skip
        if api_key in (wire.ADD_OFFSETS_TO_TXN, wire.TXN_OFFSET_COMMIT):
            detail["group_id"] = request.group_id
        if api_key == wire.END_TXN:
            detail["committed"] = bool(request.committed)
        error = self._event(view, now_ms, api_key, version, response, **detail)
        name = api_name(api_key)
        for txn, pid, epoch in entries:
            instance = self._sent(view, now_ms, txn, int(pid), int(epoch), name)
            self._answered(instance, view, now_ms, name, error)
            if instance is None or response is None or error is not None:
                continue
            if api_key == wire.END_TXN:
                instance.open_since_ms = None
                new_pid, new_epoch = getattr(response, "producer_id", -1), getattr(response, "producer_epoch", -1)
                if int(new_pid) >= 0 and (int(new_pid), int(new_epoch)) != (instance.producer_id, instance.epoch):
                    self._move(instance, int(new_pid), int(new_epoch), view.conn_id)  # KIP-890: bumped at EndTxn
            elif instance.open_since_ms is None and api_key != wire.TXN_OFFSET_COMMIT:
                instance.open_since_ms = now_ms

    def _produce(self, view: ConnectionView, now_ms: int, version: int, head: Any, response: Any) -> None:
        if not isinstance(head, wire.ProduceHead) or head.producer_id is None:
            return
        topics = sorted({t.name for t in getattr(response, "responses", ()) if getattr(t, "name", None)})
        if not head.transactional:
            for topic in topics:
                self._writers(topic)[1].add(view.conn_id)
            if head.producer_id >= 0:
                view.used(now_ms, None, head.producer_id, head.producer_epoch or 0, "Produce")
            return
        error = self._event(
            view, now_ms, wire.PRODUCE, version, response, transactional_id=head.transactional_id,
            producer_id=head.producer_id, epoch=head.producer_epoch, topics=topics,
        )  # fmt: skip
        instance = self._sent(
            view, now_ms, head.transactional_id, head.producer_id, head.producer_epoch or 0, "Produce"
        )
        self._answered(instance, view, now_ms, "Produce", error)
        if instance is not None:
            for topic in topics:
                self._writers(topic)[0].add(instance.number)
            if error is None and response is not None and instance.open_since_ms is None:
                instance.open_since_ms = now_ms  # transaction.version 2: Produce adds its partitions itself

    def _writers(self, topic: str) -> tuple[set[int], set[int]]:
        return self._topics.setdefault(topic, (set(), set()))

    # ------------------------------------------------------------------------------------------ groups
    def _group(
        self, view: ConnectionView, now_ms: int, api_key: int, version: int, request: Any, response: Any
    ) -> None:
        group_id = request.group_id
        member_id = getattr(request, "member_id", None)
        if member_id is None and getattr(request, "members", None):
            member_id = request.members[0].member_id
        detail: dict[str, Any] = {"group_id": group_id, "member_id": member_id}
        generation = getattr(request, "generation_id", getattr(request, "generation_id_or_member_epoch", None))
        if generation is not None:
            detail["generation"] = int(generation)
        if api_key == wire.OFFSET_COMMIT:
            detail["partitions"] = sum(len(t.partitions) for t in request.topics)
        error = self._event(view, now_ms, api_key, version, response, **detail)
        state = view.groups.setdefault(group_id, {"member_id": None, "generation": None, "last": None})
        state["last"] = {"api": api_name(api_key), "error": error, "at_ms": now_ms}
        if api_key == wire.JOIN_GROUP and response is not None and error is None:
            state["member_id"], state["generation"] = response.member_id, int(response.generation_id)
        elif api_key == wire.LEAVE_GROUP and error is None:
            state["member_id"] = None

    # ------------------------------------------------------------------------------------------ findings
    def findings(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for txn, numbers in sorted(self._by_txn.items()):
            alive = [self.instances[n] for n in numbers if n in self.instances]
            for older in alive:
                if older.fenced_by is None or older.fenced_by not in self.instances:
                    continue
                newer = self.instances[older.fenced_by]
                if older.sent_after_fence or older.open_when_fenced_ms is not None:
                    out.append({
                        "finding": "shared_transactional_id", "transactional_id": txn,
                        "instances": [self._instance_json(older), self._instance_json(newer)],
                        "hosts": sorted({c["client"].rsplit(":", 1)[0] for c in self._conns_of(older, newer)}),
                    })  # fmt: skip
                if older.open_when_fenced_ms is not None:
                    out.append({
                        "finding": "fence", "transactional_id": txn,
                        "fencing": {"instance": newer.number, "connection": newer.conn_id,
                                    "client": self._client(newer.conn_id), "at_ms": older.fenced_ms,
                                    "producer_id": newer.producer_id, "epoch": newer.epoch},
                        "fenced": {"instance": older.number, "connections": sorted(older.conns),
                                   "clients": [self._client(c) for c in sorted(older.conns)],
                                   "producer_id": older.producer_id, "epoch": older.epoch,
                                   "transaction_open_since_ms": older.open_when_fenced_ms},
                        "next_error": older.error_after_fence,
                    })  # fmt: skip
        for topic, (inside, outside) in sorted(self._topics.items()):
            if inside and outside:
                out.append({
                    "finding": "outside_transaction", "topic": topic,
                    "inside": [self._instance_json(self.instances[n]) for n in sorted(inside) if n in self.instances],
                    "outside": [{"connection": c, "client": self._client(c)} for c in sorted(outside)],
                })  # fmt: skip
        return out

    def _client(self, conn_id: int) -> dict[str, Any] | None:
        view = self.conns.get(conn_id)
        if view is None:
            return None
        software = None if view.software is None else f"{view.software[0]} {view.software[1]}"
        return {"connection": conn_id, "client": f"{view.client_host}:{view.client_port}",
                "client_id": view.client_id, "software": software}  # fmt: skip

    def _conns_of(self, *instances: Instance) -> Iterator[dict[str, Any]]:
        for instance in instances:
            for conn_id in sorted(instance.conns):
                client = self._client(conn_id)
                if client is not None:
                    yield client

    def _instance_json(self, instance: Instance) -> dict[str, Any]:
        return {
            "instance": instance.number,
            "producer_id": instance.producer_id,
            "epoch": instance.epoch,
            "init_connection": instance.conn_id,
            "started_ms": instance.started_ms,
            "connections": list(self._conns_of(instance)),
        }

    def report(self) -> dict[str, Any]:
        return {
            "connections": [v.to_json() for _, v in sorted(self.conns.items())],
            "transactional_ids": {
                txn: [self._instance_json(self.instances[n]) for n in numbers if n in self.instances]
                for txn, numbers in sorted(self._by_txn.items())
            },
            "findings": self.findings(),
        }


def first_error(response: Any) -> str | None:
    """The first error an answer carries (its own, or a topic's or partition's), by Kafka's name."""
    for code in _error_codes(response):
        name = error_name(int(code))
        if name is not None:
            return name
    return None


def _error_codes(value: Any) -> Iterator[int]:
    if value is None or not dataclasses.is_dataclass(value):
        return
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if f.name.endswith("error_code") and item is not None:
            yield int(item.value if hasattr(item, "value") else item)
        elif isinstance(item, tuple):
            for sub in item:
                yield from _error_codes(sub)
        elif dataclasses.is_dataclass(item):
            yield from _error_codes(item)


_TXN_APIS = frozenset({wire.ADD_PARTITIONS_TO_TXN, wire.ADD_OFFSETS_TO_TXN, wire.TXN_OFFSET_COMMIT, wire.END_TXN})
_GROUP_APIS = frozenset({wire.JOIN_GROUP, wire.SYNC_GROUP, wire.HEARTBEAT, wire.LEAVE_GROUP, wire.OFFSET_COMMIT})
