"""External clients in a session's command log (issue 16): what they did, stored compactly, replayed, and shown.

A session serves its simulated cluster over the Kafka protocol through a protocol server core attached to its
simulator (playground/simserver/core.py: pure, deterministic; its inputs are request frames, disconnects and time).
Everything the core was given is in the log, so any process replays it without sockets, a moment (`?at=k`) and a
fork restore it, and the view shows the clients as actors (playground/simserver/clients.py). The sockets are
listener.py's, in the one process that listens.

Entries of the log (besides steps and actors added):
- {"listen": {"brokers": {"1": [host, port], ...}, "owner": ..., "wall_ms": ..., "config": {...}}}: from now on the
  brokers are served at these addresses (a core is attached to the simulator; listening again closes the connections
  the last one had), bounding what clients send by `config` (broker settings, simserver/bounds.py; absent in logs
  from before the bounds, which replay unbounded as they ran).
- {"ext": {"t": ms, "end": ms, "n": count, "size": bytes, "sum": [[actor, api, count], ...], "wall_ms": ...}}, and
  beside it the row's payload: what the clients sent, in order, each at its virtual time (`t` is the first one's;
  the others are deltas), then time passes to `end`. The payload is the inputs packed (kind, delta ms, connection,
  broker, frame) and compressed with zlib (`size` bytes): a chatty consumer's requests differ in a few bytes each
  (correlation id, offsets), so a row of ten Fetch requests costs about what one does. It is stored apart from the
  entry (Command.payload) and read only to replay the row, so that a session's log in memory holds none of it; an
  entry on its way to the database carries it under PAYLOAD (an entry of an older log, under the body's "in", in
  base64). `sum` is for people (the narrative, log.json): who sent what.
- {"unlisten": {"why": "stopped" | "idle" | "closed", "wall_ms": ..., "vt": ms}}: every connection closed, nobody
  listens; at the virtual time `vt` (the clock followed the wall clock since the last entry).
A step, and an actor added, carries "vt" (the virtual time it ran at) when it ran while clients were connected: the
clock followed the wall clock meanwhile, so that much time passes before it on a replay too.

The listener feeds inputs into the live session (`receive`, `disconnect`) and `cut` makes the entry of what came since
the last one; the commit loop stores it before anything else it stores (commands.py), so the log's order is the order
in which the core handled things.
"""

from __future__ import annotations

import base64
import os
import secrets
import socket
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

from playground.protocol.messages import api_name, peek
from playground.simserver.apis import HANDLERS
from playground.simserver.clients import FENCING_ERRORS, ROUTINE_ERRORS
from playground.simserver.core import ServerCore

LISTEN, UNLISTEN, EXT = "listen", "unlisten", "ext"
KINDS = (LISTEN, UNLISTEN, EXT)
PAYLOAD = "payload"  # an ext entry's packed inputs (bytes), beside it until it is stored
REQUEST, DISCONNECT = 0, 1

# Who listens: this server process (a listen entry names it; another process refuses commands meanwhile).
OWNER = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
# session id -> the virtual time now, while this process's listener follows the wall clock (clients connected).
CLOCKS: dict[str, Callable[[], int]] = {}


class Live(Protocol):
    """What this module reads and keeps of a live session: session/live.py's Live, which applies the log's external
    entries through this module (so this one does not import it back)."""

    session_id: str
    backend: Any
    pending: list[dict[str, Any]]
    ext_inputs: list[tuple[int, int, int, int, bytes]]

    @property
    def length(self) -> int: ...


def is_external(entry: Mapping[str, Any]) -> bool:
    return any(k in entry for k in KINDS)


def payload_of(entry: Mapping[str, Any]) -> bytes:
    """An ext entry's packed inputs: beside it (PAYLOAD), or in an older log's body ("in", base64)."""
    payload = entry.get(PAYLOAD)
    if payload is not None:
        return bytes(payload)
    text = entry[EXT].get("in")
    if text is None:
        raise KeyError("an ext entry without its payload: read the row's payload to replay it")
    return base64.b64decode(text)


def without_payload(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry as the log holds it in memory and in its JSON: its payload apart (the entry itself when it has
    none)."""
    if PAYLOAD not in entry and not (EXT in entry and "in" in entry[EXT]):
        return entry
    out = {k: v for k, v in entry.items() if k != PAYLOAD}
    if EXT in out and "in" in out[EXT]:
        out[EXT] = {k: v for k, v in out[EXT].items() if k != "in"}
    return out


def inner_backend(backend: Any) -> Any:
    """The simulator under whatever wraps it (the scenario's database)."""
    while "inner" in getattr(backend, "__dict__", {}):
        backend = backend.__dict__["inner"]
    return backend


def can_listen(backend: Any) -> bool:
    inner = inner_backend(backend)
    return getattr(inner, "cluster", None) is not None and getattr(inner, "name", "") == "sim"


def core_of(backend: Any) -> ServerCore | None:
    core = getattr(inner_backend(backend), "server_core", None)
    return core if isinstance(core, ServerCore) else None


# ------------------------------------------------------------------------------------------------ packing inputs
def _varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


Input = tuple[int, int, int, int, bytes]  # (kind, virtual ms, connection, broker, frame)


def pack(inputs: Iterable[Input]) -> tuple[int, bytes]:
    """(the first input's time, the payload: the inputs packed and compressed)."""
    out = bytearray()
    first: int | None = None
    last = 0
    for kind, at_ms, conn, broker, payload in inputs:
        if first is None:
            first = last = at_ms
        out.append(kind)
        _varint(out, at_ms - last)
        last = at_ms
        _varint(out, conn)
        if kind == REQUEST:
            _varint(out, broker)
            _varint(out, len(payload))
            out += payload
    return first or 0, zlib.compress(bytes(out), 6)


def unpack(first_ms: int, payload: bytes) -> Iterator[Input]:
    data = zlib.decompress(payload)
    pos, at_ms = 0, first_ms
    while pos < len(data):
        kind = data[pos]
        pos += 1
        delta, pos = _read_varint(data, pos)
        at_ms += delta
        conn, pos = _read_varint(data, pos)
        if kind == REQUEST:
            broker, pos = _read_varint(data, pos)
            size, pos = _read_varint(data, pos)
            yield kind, at_ms, conn, broker, data[pos : pos + size]
            pos += size
        else:
            yield kind, at_ms, conn, 0, b""


# ------------------------------------------------------------------------------------------------ applying entries
def _attach(backend: Any, brokers: Mapping[str, Any], bounds: Mapping[str, str]) -> ServerCore:
    """Serve the session's brokers at these addresses, bounding what clients send by `bounds` (broker settings:
    simserver/bounds.py; a listen entry from before bounds has none, and replays as it ran)."""
    inner = inner_backend(backend)
    endpoints = {int(b): (str(h), int(p)) for b, (h, p) in brokers.items()}
    core = core_of(inner)
    if core is None:
        reserved = list(getattr(inner, "producers", {})) + list(getattr(inner, "consumers", {}))
        core = ServerCore(
            inner.cluster,
            endpoints,
            start_ms=inner.cluster.now_ms,
            seed=int(getattr(inner, "seed", 0)),
            config={**dict(getattr(inner, "config", {})), **bounds},
            record_values=True,
            track_clients=True,
            reserved=reserved,
            handlers=HANDLERS,
        )
        inner.server_core = core
    else:
        core.close_connections()
        core.endpoints = endpoints
        core.configure({**dict(getattr(inner, "config", {})), **bounds})
    return core


def _position(core: ServerCore, position: int) -> None:
    if core.clients is not None:
        core.clients.position = position


def outcome_at(core: ServerCore | None, position: int) -> str:
    """What the clients were answered during the entry at `position`: a fencing error first, then any other error a
    client does not simply retry, else ok (the scrubber marks the first two)."""
    if core is None or core.clients is None:
        return "ok"
    errors = [op["outcome"] for op in core.clients.ops if op["n"] == position and op["outcome"] != "ok"]
    for error in errors:
        if error in FENCING_ERRORS:
            return str(error)
    return str(next((e for e in errors if e not in ROUTINE_ERRORS), "ok"))


def apply(backend: Any, entry: Mapping[str, Any], position: int) -> str:
    """Carry out a listen, unlisten or ext entry of the log on the backend (a replay: nothing is sent anywhere)."""
    if LISTEN in entry:
        _attach(backend, entry[LISTEN]["brokers"], entry[LISTEN].get("config", {})).take_output()
        return "ok"
    core = core_of(backend)
    if core is None:
        return "ok"  # nothing was ever served: nothing to close or to feed
    _position(core, position)
    if UNLISTEN in entry:
        if "vt" in entry[UNLISTEN]:
            core.advance(int(entry[UNLISTEN]["vt"]))  # the time the clock followed since the last entry
        core.close_connections()
        core.take_output()
        return "ok"
    body = entry[EXT]
    for kind, at_ms, conn, broker, payload in unpack(int(body["t"]), payload_of(entry)):
        if kind == REQUEST:
            core.receive(at_ms, broker, conn, payload)
        else:
            core.disconnect(at_ms, conn)
    core.advance(int(body["end"]))
    core.take_output()  # their sockets had these when it happened (or there are none: a replay)
    return outcome_at(core, position)


def before_step(backend: Any, entry: Mapping[str, Any], position: int) -> None:
    """A step of the session, with clients served: the time that passed before it (`vt`) passes first."""
    core = core_of(backend)
    if core is None:
        return
    _position(core, position)
    if "vt" in entry:
        core.advance(int(entry["vt"]))


def after_step(backend: Any) -> None:
    """A stopped broker's connections close (the session's broker.stop step stopped its process)."""
    core = core_of(backend)
    if core is None:
        return
    cluster = core.cluster
    for broker in cluster.broker_ids:
        if not cluster.broker_up(broker):
            core.close_connections(broker)


# ------------------------------------------------------------------------------------------------ live inputs
def position_of(live: Live) -> int:
    """The log position the inputs coming in now will have: after the stored log and the entries cut but not
    stored yet."""
    return live.length + len(live.pending)


def now_of(live: Live) -> int | None:
    clock = CLOCKS.get(live.session_id)
    return clock() if clock is not None else None


def receive(live: Live, conn: int, broker: int, payload: bytes) -> None:
    core = core_of(live.backend)
    assert core is not None
    at_ms = max(core.now_ms, now_of(live) or 0)
    _position(core, position_of(live))
    live.ext_inputs.append((REQUEST, at_ms, conn, broker, payload))
    core.receive(at_ms, broker, conn, payload)


def disconnect(live: Live, conn: int) -> None:
    core = core_of(live.backend)
    assert core is not None
    at_ms = max(core.now_ms, now_of(live) or 0)
    _position(core, position_of(live))
    if conn in core.conns:
        live.ext_inputs.append((DISCONNECT, at_ms, conn, 0, b""))
    core.disconnect(at_ms, conn)


def tick(live: Live) -> None:
    """Time passes to the wall clock's (timeouts, long-polling fetches, the coordinator's scans)."""
    core = core_of(live.backend)
    now = now_of(live)
    if core is None or now is None:
        return
    _position(core, position_of(live))
    core.advance(now)


def advance(live: Live, now_ms: int) -> None:
    """Time passes to `now_ms`, ahead of the wall clock if need be (a tap's recording waits for the simulator's
    answer to a request upstream has answered): the next input comes at that time, so a replay passes it too."""
    core = core_of(live.backend)
    if core is None:
        return
    _position(core, position_of(live))
    core.advance(now_ms)


def summary(core: ServerCore, inputs: Iterable[Input]) -> list[list[Any]]:
    counts: dict[tuple[str, str], int] = {}
    for kind, _at, conn, _broker, payload in inputs:
        if kind != REQUEST:
            continue
        try:
            api = api_name(peek(payload)[0])
        except Exception:
            api = "?"
        actor = core.clients.of(conn) if core.clients is not None else None
        who = actor.name if actor is not None else (_client_id(payload) or f"connection {conn}")
        counts[(who, api)] = counts.get((who, api), 0) + 1
    return [[who, api, n] for (who, api), n in counts.items()]


def _client_id(payload: bytes) -> str | None:
    """The request header's client.id (a nullable string after api key, version and correlation id)."""
    size = int.from_bytes(payload[8:10], "big", signed=True) if len(payload) >= 10 else -1
    return payload[10 : 10 + size].decode("utf-8", "replace") if size > 0 else None


def cut(live: Live) -> dict[str, Any] | None:
    """The entry of the inputs the listener fed since the last cut (None: none), added to `live.pending`."""
    if not live.ext_inputs:
        return None
    core = core_of(live.backend)
    assert core is not None
    now = now_of(live)
    if now is not None:
        _position(core, position_of(live))
        core.advance(now)
    inputs, live.ext_inputs = live.ext_inputs, []
    first, packed = pack(inputs)
    position = position_of(live)
    body = {
        "t": first,
        "end": core.now_ms,
        "n": len(inputs),
        "size": len(packed),
        "sum": summary(core, inputs),
    }
    body["wall_ms"] = int(time.time() * 1000)  # when (for whoever asks whether the listener is still there)
    entry = {EXT: body, PAYLOAD: packed, "outcome": outcome_at(core, position)}
    live.pending.append(entry)
    return entry


def label(entry: Mapping[str, Any], name: Callable[[str], str] = str) -> tuple[str, str]:
    """(label, a few words) of an external entry, for the narrative and the scrubber; `name` shows a client's name
    (a page cuts them: a client.id may be 32,767 characters)."""
    if LISTEN in entry:
        return "listen", ", ".join(f"{h}:{p}" for h, p in entry[LISTEN]["brokers"].values())
    if UNLISTEN in entry:
        return "unlisten", str(entry[UNLISTEN].get("why", ""))
    parts = []
    for who, api, n in entry[EXT].get("sum", []):
        parts.append(f"{name(str(who))} {api}" + (f"×{n}" if n > 1 else ""))
    return ", ".join(parts[:6]) + (" …" if len(parts) > 6 else ""), ""


# ------------------------------------------------------------------------------------------------ what is shown
def view(live: Live, out: dict[str, Any], listening: bool) -> dict[str, Any]:
    """The backend's view with the external clients as actors beside the session's own (their cards and columns say
    `external`), their groups' committed offsets, and the listener's state."""
    core = core_of(live.backend)
    if core is None or core.clients is None:
        return out
    clients = core.clients
    own = set(out.get("producers", {})) | set(out.get("consumers", {}))
    producers = dict(out.get("producers", {}))
    for name, p in clients.producers().items():
        if not listening:
            p["external"]["connected"] = False
            if p["state"] != "FENCED":
                p["state"] = "DISCONNECTED"
        producers[name if name not in own else f"{name} (external)"] = p
    consumers = dict(out.get("consumers", {}))
    for name, c in clients.consumers().items():
        if not listening:
            c["external"]["connected"] = False
            c["state"] = "DISCONNECTED"
        consumers[name if name not in own else f"{name} (external)"] = c
    groups = dict(out.get("groups", {}))
    for gid in sorted(clients.groups()):
        if gid not in groups:
            groups[gid] = dict(sorted(core.cluster.groups.committed(gid).items()))
    out = {**out, "producers": producers, "consumers": consumers, "groups": groups}
    if "group_details" in out:
        out["group_details"] = _named_members(out["group_details"], clients)
    out["external"] = {
        "admins": clients.admins(),
        "listening": listening,
        "software": clients.software(core.conns.values() if listening else ()),
    }
    return out


def _named_members(details: Mapping[str, Any], clients: Any) -> dict[str, Any]:
    """The groups' members named as the session names their clients: two instances sharing a client.id are told
    apart ("billing", "billing#2") by the member id each was given."""
    names = {(a.group_id, a.member_id): a.name for a in clients.actors.values() if a.member_id}
    out = {}
    for gid, g in details.items():
        members = [{**m, "name": names.get((gid, m["member_id"]), m["client_id"])} for m in g.get("members") or ()]
        out[gid] = {**g, "members": members}
    return out


def history_ops(backend: Any, position: int | None = None) -> list[dict[str, Any]]:
    """What the external clients did (during the log entry at `position`, or all the core keeps), as the anomaly
    checker's steps (see clients.py)."""
    core = core_of(backend)
    if core is None or core.clients is None:
        return []
    return [dict(op) for op in core.clients.ops if position is None or op["n"] == position]


def race_endings(backend: Any) -> list[dict[str, Any]]:
    """Which ending of the AddOffsetsToTxn / AddPartitionsToTxn race each fenced kafka-clients application took
    (simserver/clients.py's race_endings)."""
    core = core_of(backend)
    if core is None or core.clients is None:
        return []
    return core.clients.race_endings()


def isolation_levels(backend: Any) -> dict[str, str]:
    core = core_of(backend)
    if core is None or core.clients is None:
        return {}
    return {a.name: a.isolation or "read_uncommitted" for a in core.clients.actors.values() if a.kind == "consumer"}


def actors(backend: Any) -> list[dict[str, Any]]:
    """Every external client as log.json lists it."""
    core = core_of(backend)
    if core is None or core.clients is None:
        return []
    out = []
    for a in core.clients.actors.values():
        out.append(
            {
                "name": a.name,
                "kind": a.kind,
                "client_id": a.client_id,
                "transactional_id": a.transactional_id,
                "producer_id": a.producer_id,
                "producer_epoch": a.producer_epoch,
                "group_id": a.group_id,
                "library": a.software[0] if a.software else None,
                "version": a.software[1] if a.software else None,
                "requests": a.requests,
            }
        )
    return out


def requests_of(entry: Mapping[str, Any], packed: bytes) -> list[dict[str, Any]]:
    """An ext entry's inputs (its payload), readable (log.json): each request's time, connection, broker, API,
    version, correlation id and client.id, or a disconnect."""
    body = entry[EXT]
    out: list[dict[str, Any]] = []
    for kind, at_ms, conn, broker, payload in unpack(int(body["t"]), packed):
        if kind != REQUEST:
            out.append({"t": at_ms, "conn": conn, "disconnect": True})
            continue
        item: dict[str, Any] = {"t": at_ms, "conn": conn, "broker": broker, "bytes": len(payload)}
        try:
            api_key, version, correlation = peek(payload)
            item.update(api=api_name(api_key), version=version, correlation_id=correlation)
            item["client_id"] = _client_id(payload)
        except Exception:
            item["api"] = "?"
        out.append(item)
    return out
