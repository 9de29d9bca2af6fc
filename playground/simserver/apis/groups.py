"""The group coordinator's APIs: OffsetCommit, OffsetFetch and OffsetDelete, and the classic group protocol (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, ListGroups, DescribeGroups, DeleteGroups) as playground/sim/groups.py runs it."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from playground.protocol.messages import ms
from playground.sim.groups import DEAD, ClassicMember
from playground.simserver.apis.base import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CommitRequest,
    _topic_name,
    _tp,
    api,
    reply_offsets,
)
from playground.simserver.core import Call

Handler = Callable[[Call], None]


@api(8)
def offset_commit(call: Call) -> None:
    body = call.body
    c = call.core.cluster
    if call.version == 0:
        # KafkaApis.commitOffsetsToZookeeper: v0 stored offsets in ZooKeeper, which a KRaft cluster does not have
        reply_offsets(call, body.topics, lambda t, p: "UNSUPPORTED_VERSION")
        return
    commit = CommitRequest.read(call, body.topics)
    call.announce(
        f"group coordinator(b{call.broker})",
        f"group {body.group_id}, " + ", ".join(f"{tp}={off}" for tp, off in commit.offsets.items()),
    )

    # KafkaApis: the partitions of unknown topics are answered so, the others go to the coordinator
    def reply(error: str | None = None, **_: Any) -> None:
        reply_offsets(call, body.topics, lambda t, p: commit.error(_tp(t, p), error))

    if not commit.known():
        reply()
        return
    c.handle_offset_commit(
        call.broker,
        body.group_id,
        int(getattr(body, "generation_id_or_member_epoch", -1)),
        getattr(body, "member_id", ""),
        commit.committable(),
        reply,
        getattr(body, "group_instance_id", None),  # v7+
        meta=commit.meta,
        too_large=commit.too_large_known(),
        version=call.version,
    )


@api(9)
def offset_fetch(call: Call) -> None:
    body, version = call.body, call.version
    if version == 0:
        # KafkaApis.handleOffsetFetchRequestFromZookeeper: v0 read ZooKeeper, which a KRaft cluster does not have
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p, "committed_offset": -1, "metadata": "", "error_code": "UNSUPPORTED_VERSION"}
                    for p in t.partition_indexes
                ],
            }
            for t in body.topics or ()
        ]
        call.reply({"topics": topics}, error="UNSUPPORTED_VERSION")
        return
    require_stable = bool(getattr(body, "require_stable", False))
    if version >= 8:
        groups = [_fetch_group(call, g.group_id, g.topics, require_stable) for g in body.groups]
        error = next((g.get("error_code") for g in groups if g.get("error_code")), None)
        call.reply({"throttle_time": 0, "groups": groups}, error=error)
        return
    group = _fetch_group(call, body.group_id, body.topics, require_stable)
    call.reply(
        {"throttle_time": 0, "topics": group["topics"], "error_code": group.get("error_code")},
        error=group.get("error_code"),
    )


def _fetch_group(call: Call, group_id: str, topics: Any, require_stable: bool) -> dict[str, Any]:
    """One group's committed offsets. With require_stable (KIP-447), a partition with a transactional offset commit
    pending gets UNSTABLE_OFFSET_COMMIT and the others their offsets (GroupMetadataManager.getOffsets)."""
    groups = call.core.cluster.groups
    group_error: list[str | None] = [None]

    def ask(tps: tuple[str, ...], stable: bool) -> dict[str, Any] | str:
        out: list[dict[str, Any] | str] = []

        def reply(error: str | None = None, **result: Any) -> None:
            out.append(error if error else result)

        call.core.cluster.handle_offset_fetch(call.broker, group_id, tps, stable, reply)
        return out[0] if out else "UNKNOWN_SERVER_ERROR"

    ids: dict[str, Any] = {}  # topic -> the id it was asked by (OffsetFetch v10, KIP-1319), or its own
    if topics is None:
        tps_all = tuple(sorted(groups.committed(group_id)))
        wanted = [(tp.rpartition("-")[0], int(tp.rpartition("-")[2])) for tp in tps_all]
        ids = {t: call.core.topic_id(t) for t, _p in wanted if t in call.core.cluster.topics}
    else:
        wanted = []
        for t in topics:
            name, topic_id = _topic_name(call, t)
            key = name if name is not None else str(topic_id)
            ids[key] = topic_id
            wanted += [(key, int(p)) for p in t.partition_indexes]
    parts: dict[str, list[dict[str, Any]]] = {}
    for topic, p in wanted:
        tp = _tp(topic, p)
        entry: dict[str, Any] = {"partition_index": p, "committed_leader_epoch": -1, "metadata": ""}
        if ids.get(topic) is not None and call.core.topic_of(ids[topic]) is None:
            entry.update(committed_offset=-1, error_code="UNKNOWN_TOPIC_ID")
            parts.setdefault(topic, []).append(entry)
            continue
        answer = ask((tp,), require_stable)
        if isinstance(answer, str):
            if answer in ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"):
                group_error[0] = answer
            entry.update(committed_offset=-1, error_code=answer)
        else:
            offset = answer["offsets"].get(tp)
            epoch, metadata = answer["meta"][tp]
            entry.update(committed_offset=-1 if offset is None else offset, error_code=None)
            if offset is not None:
                entry.update(committed_leader_epoch=epoch, metadata=metadata)
        parts.setdefault(topic, []).append(entry)
    if topics is None and not wanted:
        check = ask((), False)
        if isinstance(check, str):
            group_error[0] = check
    if group_error[0]:
        return {"group_id": group_id, "topics": [], "error_code": group_error[0]}
    return {
        "group_id": group_id,
        "topics": [{"name": t, "topic_id": ids.get(t), "partitions": ps} for t, ps in parts.items()],
        "error_code": None,
    }


# ---------------------------------------------------------------------------------------------- groups
# The classic group protocol as the simulator's group coordinator runs it (playground/sim/groups.py).

CLIENT_HOST = "/127.0.0.1"  # where a member connects from, as DescribeGroups shows it (the server listens on loopback)


@api(11)
def join_group(call: Call) -> None:
    body, version = call.body, call.version
    member_id = body.member_id
    protocols = tuple((p.name, bytes(p.metadata)) for p in body.protocols)
    session_ms = ms(body.session_timeout)
    rebalance_ms = ms(getattr(body, "rebalance_timeout", body.session_timeout))  # v0: the session timeout
    instance_id = getattr(body, "group_instance_id", None)  # v5+ (KIP-345)
    call.announce(
        f"group coordinator(b{call.broker})",
        f"group {body.group_id}, member {member_id or '(new)'}"
        + (f", instance {instance_id}" if instance_id is not None else "")
        + f", {', '.join(name for name, _ in protocols)}",
    )

    def reply(error: str | None = None, **result: Any) -> None:
        name = result.get("protocol_name")
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "generation_id": result.get("generation_id", -1),
                "protocol_type": result.get("protocol_type"),
                "protocol_name": name if version >= 7 else (name or ""),
                "leader": result.get("leader", ""),
                "skip_assignment": bool(result.get("skip_assignment", False)),
                "member_id": result.get("member_id", member_id),
                "members": [
                    {"member_id": m, "group_instance_id": instance, "metadata": metadata}
                    for m, instance, metadata in result.get("members", ())
                ],
            },
            error=error,
            detail=f"member {result.get('member_id', member_id)}, generation {result.get('generation_id', -1)}",
        )

    call.core.cluster.handle_classic_join_group(
        call.broker,
        body.group_id,
        member_id,
        call.request.client_id or "",
        CLIENT_HOST,
        session_ms,
        rebalance_ms,
        body.protocol_type,
        protocols,
        version >= 4,  # KIP-394: a new member is given its id and rejoins with it
        reply,
        instance_id=instance_id,
        supports_skipping_assignment=version >= 9,  # KIP-814
    )


@api(14)
def sync_group(call: Call) -> None:
    body = call.body
    assignments = {a.member_id: bytes(a.assignment) for a in body.assignments}
    call.announce(
        f"group coordinator(b{call.broker})",
        f"group {body.group_id}, member {body.member_id}, generation {body.generation_id}"
        + (f", {len(assignments)} assignment(s)" if assignments else ""),
    )

    def reply(error: str | None = None, **result: Any) -> None:
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "protocol_type": result.get("protocol_type"),
                "protocol_name": result.get("protocol_name"),
                "assignment": result.get("assignment", b""),
            },
            error=error,
        )

    call.core.cluster.handle_sync_group(
        call.broker,
        body.group_id,
        int(body.generation_id),
        body.member_id,
        getattr(body, "protocol_type", None),
        getattr(body, "protocol_name", None),
        assignments,
        reply,
        getattr(body, "group_instance_id", None),  # v3+
    )


@api(12)
def heartbeat(call: Call) -> None:
    body = call.body

    def reply(error: str | None = None, **_: Any) -> None:
        call.reply({"throttle_time": 0, "error_code": error}, error=error)

    call.core.cluster.handle_heartbeat(
        call.broker,
        body.group_id,
        int(body.generation_id),
        body.member_id,
        reply,
        getattr(body, "group_instance_id", None),  # v3+
    )


@api(13)
def leave_group(call: Call) -> None:
    body, version = call.body, call.version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in body.members]
    else:
        leaving = [(body.member_id, None)]
    call.announce(
        f"group coordinator(b{call.broker})",
        f"group {body.group_id}, "
        + ", ".join(m or (f"instance {instance}" if instance is not None else "''") for m, instance in leaving),
    )

    def reply(error: str | None = None, **result: Any) -> None:
        errors = result.get("errors") or [None] * len(leaving)
        if version < 3 and error is None:
            error = errors[0]
        call.reply(
            {
                "throttle_time": 0,
                "error_code": error,
                "members": [
                    {"member_id": m, "group_instance_id": instance, "error_code": member_error}
                    for (m, instance), member_error in zip(leaving, errors)
                ],
            },
            # the timeline shows the first member's error when the request as a whole succeeded
            error=error or next((e for e in errors if e), None),
        )

    call.core.cluster.handle_classic_leave_group(call.broker, body.group_id, tuple(leaving), reply)


@api(16)
def list_groups(call: Call) -> None:
    body = call.body
    groups = call.core.cluster.groups
    states = {s.lower() for s in getattr(body, "states_filter", ())}
    types = {t.lower() for t in getattr(body, "types_filter", ())}
    out = []
    for gid, g in sorted(groups.groups.items()):
        if groups.coordinator_of(gid) != call.broker:
            continue
        if states and g.state.lower() not in states:
            continue
        if types and "classic" not in types:
            continue
        out.append(
            {
                "group_id": gid,
                "protocol_type": g.protocol_type or ("consumer" if g.members else ""),
                "group_state": g.state,
                "group_type": "classic",
            }
        )
    call.reply({"throttle_time": 0, "error_code": None, "groups": out})


@api(15)
def describe_groups(call: Call) -> None:
    groups = call.core.cluster.groups
    out = []
    for gid in call.body.groups:
        entry: dict[str, Any] = {
            "group_id": gid,
            "group_state": "Dead",
            "protocol_type": "",
            "protocol_data": "",
            "members": [],
            "authorized_operations": AUTHORIZED_OPERATIONS_OMITTED,
        }
        if groups.coordinator_of(gid) != call.broker:
            entry["error_code"] = "NOT_COORDINATOR"
        else:
            entry["error_code"] = None
            g = groups.groups.get(gid)
            if g is not None:
                classic = g.protocol_type is not None
                entry.update(
                    group_state=g.state,
                    protocol_type=g.protocol_type or ("consumer" if g.members else ""),
                    protocol_data=(g.protocol_name or "") if classic else ("range" if g.members else ""),
                    members=[
                        {
                            "member_id": m.member_id,
                            "group_instance_id": m.instance_id,  # v4+
                            "client_id": m.client_id,
                            "client_host": getattr(m, "client_host", CLIENT_HOST),
                            # what DescribeGroups shows of a member: its metadata for the group's protocol and its
                            # assignment, once the group is Stable (GroupMetadata.summary)
                            "member_metadata": m.metadata(g.protocol_name) if isinstance(m, ClassicMember) else b"",
                            "member_assignment": m.member_assignment
                            if isinstance(m, ClassicMember) and g.state == "Stable"
                            else b"",
                        }
                        for m in g.members.values()
                    ],
                )
        out.append(entry)
    call.reply({"throttle_time": 0, "groups": out})


@api(42)
def delete_groups(call: Call) -> None:
    groups = call.core.cluster.groups
    results = []
    for gid in call.body.groups_names:
        g = groups.groups.get(gid)
        if groups.coordinator_of(gid) != call.broker:
            error = "NOT_COORDINATOR"
        elif g is None:
            error = "GROUP_ID_NOT_FOUND"
        elif g.members:
            error = "NON_EMPTY_GROUP"
        else:
            del groups.groups[gid]
            error = None
        results.append({"group_id": gid, "error_code": error, "error_message": None})
    call.reply({"throttle_time": 0, "results": results})


@api(47)
def offset_delete(call: Call) -> None:
    """OffsetDelete (GroupCoordinator.handleDeleteOffsets): an empty group's committed offsets go; a consumer group
    with members keeps those of the topics it is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC); a group of another kind
    with members refuses (NON_EMPTY_GROUP). Partitions of unknown topics: UNKNOWN_TOPIC_OR_PARTITION."""
    body = call.body
    coordinator = call.core.cluster.groups
    gid = body.group_id
    wanted = [(t.name, int(p.partition_index)) for t in body.topics for p in t.partitions]
    call.announce(f"group coordinator(b{call.broker})", f"group {gid}, " + ", ".join(_tp(t, p) for t, p in wanted))
    g = coordinator.groups.get(gid)
    group_error = None
    if coordinator.coordinator_of(gid) != call.broker:
        group_error = "NOT_COORDINATOR"
    elif g is None or g.state == DEAD:
        group_error = "GROUP_ID_NOT_FOUND"
    elif g.members and g.classic and g.protocol_type != "consumer":
        group_error = "NON_EMPTY_GROUP"
    if group_error:
        call.reply({"throttle_time": 0, "error_code": group_error, "topics": []}, error=group_error)
        return
    assert g is not None
    subscribed = _subscribed(g) if g.members else set()
    errors: dict[tuple[str, int], str | None] = {}
    for topic, p in wanted:
        if _tp(topic, p) not in call.core.cluster.partitions:
            errors[(topic, p)] = "UNKNOWN_TOPIC_OR_PARTITION"
        elif topic in subscribed:
            errors[(topic, p)] = "GROUP_SUBSCRIBED_TO_TOPIC"
        else:
            g.forget_offset(_tp(topic, p))
            errors[(topic, p)] = None
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, p), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": p, "error_code": error})
    topics = [{"name": t, "partitions": parts} for t, parts in by_topic.items()]
    first = next((e for e in errors.values() if e), None)
    call.reply({"throttle_time": 0, "error_code": None, "topics": topics}, error=first)


def _subscribed(g: Any) -> set[str]:
    """The topics a consumer group's members are subscribed to (ConsumerProtocolSubscription in their metadata of
    the group's protocol: int16 version, then the topics), or the simulator's own consumers' topics."""
    out: set[str] = set()
    for m in g.members.values():
        if isinstance(m, ClassicMember):
            out |= _subscription_topics(m.metadata(g.protocol_name))
        else:
            out |= set(m.topics)
    return out


def _subscription_topics(data: bytes) -> set[str]:
    try:
        (count,) = struct.unpack_from(">i", data, 2)
        pos, topics = 6, set()
        for _ in range(count):
            (size,) = struct.unpack_from(">h", data, pos)
            topics.add(data[pos + 2 : pos + 2 + size].decode("utf-8"))
            pos += 2 + size
        return topics
    except (struct.error, UnicodeDecodeError):
        return set()
