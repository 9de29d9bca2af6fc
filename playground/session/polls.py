"""A connected application's consume-transform-produce loop written as a scenario's steps ("save as scenario",
export.py): which consumer each send_offsets_to_transaction names, and how many records each of that consumer's
polls takes, so that the re-enactment's positions are the offsets the application sent (issue 31).

What the wire shows: a Fetch's records (the client's `poll` operation, simserver/clients.py) and a TxnOffsetCommit's
offsets. What it does not: how many of the fetched records the application was given before it sent the offsets
(librdkafka and kafka-clients fetch ahead and hand records out from their buffers). The step
`P.send_offsets_to_transaction: {consumer: C}` sends C's position, so each poll takes the records fetched (now or
before) below the next offsets C's producer sends for their partition, and the rest at C's first poll after that.
Exact for a consumer of one partition; of several, the re-enactment's poll may take them in another order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

SEND = "send_offsets_to_transaction"


def _sender_of(op: Mapping[str, Any], readers: Mapping[tuple[str, str], str], by_group: Mapping[str, str]) -> str:
    """The consumer whose position a producer's TxnOffsetCommit sent: the one of its group that last polled the
    partitions it names (two instances of an application each send their own), else the group's first."""
    args = op.get("args") or {}
    group = str(args.get("group"))
    for tp in args.get("offsets") or {}:
        if (group, tp) in readers:
            return readers[(group, tp)]
    return by_group.get(group, "")


def plan(
    ops: Sequence[Mapping[str, Any]], names: Mapping[str, str], groups: Mapping[str, str], by_group: Mapping[str, str]
) -> tuple[dict[int, str], dict[int, int]]:
    """For the operations `ops` (in order; `names`: a client's actor name in the scenario, `groups`: a consumer
    client's group, `by_group`: a group's first consumer actor): the consumer each send (by index) names, and the
    records each poll (by index) takes."""
    readers: dict[tuple[str, str], str] = {}  # (group, partition) -> the consumer actor that polled it last
    senders: dict[int, str] = {}
    for i, op in enumerate(ops):
        if op["action"] == "poll" and op["actor"] in groups and op["actor"] in names:
            group = str(groups[op["actor"]])
            readers.update(((group, str(tp)), names[op["actor"]]) for tp, _offset in op.get("read") or ())
        elif op["action"] == SEND:
            senders[i] = _sender_of(op, readers, by_group)
    caps: dict[int, dict[str, int]] = {}  # a poll -> the offsets its consumer's next send sends
    upcoming: dict[str, dict[str, int]] = {}
    for i in range(len(ops) - 1, -1, -1):
        op = ops[i]
        if senders.get(i):
            upcoming.setdefault(senders[i], {}).update((op.get("args") or {}).get("offsets") or {})
        elif op["action"] == "poll" and op["actor"] in names:
            caps[i] = dict(upcoming.get(names[op["actor"]], {}))
    takes: dict[int, int] = {}
    fetched: dict[str, list[tuple[str, int]]] = {}  # a consumer actor -> records fetched that no poll took yet
    for i, cap in sorted(caps.items()):
        consumer = names[ops[i]["actor"]]
        waiting = fetched.get(consumer, []) + [(str(tp), int(o)) for tp, o in ops[i].get("read") or ()]
        due = [(tp, o) for tp, o in waiting if tp not in cap or o < cap[tp]]
        fetched[consumer] = [r for r in waiting if _held(r, cap)]
        takes[i] = len(due)
    return senders, takes


def _held(record: tuple[str, int], cap: Mapping[str, int]) -> bool:
    """A record fetched at or past the offsets the next send sends: the application had not been given it then."""
    tp, offset = record
    return tp in cap and offset >= cap[tp]
