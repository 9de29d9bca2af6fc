"""What the dashboard shows of the group coordinator: each group's state and generation, its members (client.id,
host, group.instance.id, what they were assigned), its committed offsets and the transactional ones still pending
(TxnOffsetCommit written, its transaction's marker not yet), its last rebalances with what caused them, and the
last TxnOffsetCommits' KIP-447 checks (the generation and member id they carried, and the error if refused).

Follows what `kafka-consumer-groups.sh --describe --members --verbose` and `--offsets` read (DescribeGroups,
OffsetFetch), from the coordinator's own state (groupstate.py); the members' assignment is decoded from the bytes
the leader's SyncGroup gave them, as ConsumerProtocol.deserializeAssignment does (clients/.../ConsumerProtocol.java).
"""

from __future__ import annotations

import struct
from typing import Any

from playground.sim.groupstate import PREPARING_REBALANCE, ClassicMember, Group, GroupRegistry

GROUPS_SHOWN = 20
MEMBERS_SHOWN = 50
PENDING_SHOWN = 20  # producers with offsets pending in one group
ASSIGNED_SHOWN = 64  # partitions listed for one member


def group_details(registry: GroupRegistry) -> dict[str, dict[str, Any]]:
    """Every group the coordinator holds (the first GROUPS_SHOWN by id), as the dashboard shows it."""
    return {gid: _group(registry.groups[gid]) for gid in sorted(registry.groups)[:GROUPS_SHOWN]}


def _group(g: Group) -> dict[str, Any]:
    members = [_member(m, g.state == PREPARING_REBALANCE) for m in list(g.members.values())[:MEMBERS_SHOWN]]
    leader = g.members.get(g.leader_id) if g.leader_id is not None else None
    return {
        "state": g.state,
        "generation": g.generation,
        # the simulator's own consumers are assigned by the range assignor inside the coordinator
        "protocol": g.protocol_name or ("" if g.classic else "range"),
        "leader": leader.client_id if leader is not None else None,
        "members": members,
        "more_members": max(0, len(g.members) - MEMBERS_SHOWN),
        "committed": dict(sorted(g.committed.items())),
        "pending": [
            {"producer_id": pid, "offsets": dict(sorted(offsets.items()))}
            for pid, offsets in sorted(g.pending.items())[:PENDING_SHOWN]
        ],
        # KIP-447: each TxnOffsetCommit's generation and member checked against the group's (the zombie's fence)
        "txn_checks": [
            {
                "producer_id": pid,
                "generation": generation,
                "member": g.members[member_id].client_id if member_id in g.members else member_id,
                "instance_id": instance_id,
                "checked": checked,
                "error": error,
            }
            for pid, generation, member_id, instance_id, checked, error in g.txn_checks
        ],
        "rebalances": [
            {
                "time_ms": at_ms,
                "generation": generation,
                "causes": [{"cause": cause, "member": who} for cause, who in causes],
                "members": list(clients),
            }
            for at_ms, generation, causes, clients in g.rebalances
        ],
    }


def _member(m: Any, rebalancing: bool) -> dict[str, Any]:
    classic = isinstance(m, ClassicMember)
    assigned = assigned_partitions(m.member_assignment) if classic else list(m.assignment)
    rejoined = m.awaiting_join is not None if classic else m.joined
    return {
        "member_id": m.member_id,
        "client_id": m.client_id,
        "host": m.client_host if classic else "",
        "instance_id": m.instance_id,
        "alive": m.alive,
        "assignment": assigned[:ASSIGNED_SHOWN],
        "more_assigned": max(0, len(assigned) - ASSIGNED_SHOWN),
        # in a rebalance: "rejoin" keeps its partitions until it rejoins (from its next poll), "waiting" has rejoined
        "rebalance": ("waiting" if rejoined else "rejoin") if rebalancing else None,
    }


def assigned_partitions(data: bytes) -> list[str]:
    """ConsumerProtocolAssignment (versions 0-3: the same fields): int16 version, then [topic: string, partitions:
    [int32]], then user data. Bytes a client chose to send: what does not parse is shown as nothing assigned."""
    try:
        pos = 2
        (topics,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out = []
        for _ in range(max(0, topics)):
            (length,) = struct.unpack_from(">h", data, pos)
            pos += 2
            topic = bytes(data[pos : pos + length]).decode()
            pos += length
            (count,) = struct.unpack_from(">i", data, pos)
            pos += 4
            partitions = struct.unpack_from(f">{max(0, count)}i", data, pos)
            pos += 4 * max(0, count)
            out += [f"{topic}-{p}" for p in sorted(partitions)]
        return out
    except (struct.error, UnicodeDecodeError, ValueError):
        return []
