"""What a connected consumer's application was given (issue 31 item 4): the records of its Fetch answers, less the
ones its client dropped when a rebalance took their partition away or reset its position.

What Kafka's protocol tells: the records each Fetch answered and the offset each Fetch asked from (FetchRequest's
FetchOffset: the client's position), the assignment each member's SyncGroup answer gave it (ConsumerProtocolAssignment),
and what the group committed. It does not tell what poll() returned: kafka-clients and librdkafka fetch ahead into a
buffer. A rebalance empties that buffer: kafka-clients forgets a revoked partition's position (SubscriptionState,
ConsumerCoordinator.onJoinPrepare / onPartitionsRevoked) and its fetch buffer drops what it holds for a partition
that is no longer fetchable or whose position moved (FetchCollector: "Discarding stale fetch response"); librdkafka
purges its fetch queue on unassign and bumps the partition's fetch version, so a fetch answer of the old version is
dropped too. The group then starts that partition again at its committed offset: the new owner, or the same member
after an eager rebalance, fetches from there. Both clients commit what the application was given when a partition is
revoked (kafka-clients' auto commit in onJoinPrepare, librdkafka's commit on unassign with enable.auto.commit), and a
transactional listener ends its transaction with its poll; so what the group fetches again after a rebalance, from
that committed offset on, is what the earlier member fetched and its application was not given.

Hence the rule: a member's records of a partition count as given until, after a rebalance, the group fetches that
partition again from an offset at or below them: the first Fetch of it a member sends after its SyncGroup answer
takes back its own earlier copies from that offset on (those of a request sent before that answer included: the
client drops a stale fetch answer), and the copies of members that no longer hold the partition. Those records are taken back from the earlier copy and count once, for the
member that fetched them after the rebalance; a member's own refetch is not a second delivery (its poll operation
leaves them out, so the anomaly checker does not call them redelivered). A seek back without a rebalance is a second
delivery, as the application asked. An application that processed records without committing them before losing
their partition (auto commit off and no commit in onPartitionsRevoked) did get them twice; the wire cannot tell that
apart, and the output it wrote twice is what shows it (a declared pipeline judges exactly that).

Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections import deque

RUNS_MAX = 512  # runs kept per partition: the oldest are counted and no longer taken back
RECEIVED_MAX = 200  # offsets kept per partition for the consumers panel (the last rows)


class Given:
    """One consumer instance's ledger: per partition, runs of offsets [start, end) counted as given, each tagged with
    how many SyncGroup answers the member had had when the Fetch that brought them was sent."""

    __slots__ = ("recent", "runs", "total")

    def __init__(self) -> None:
        self.runs: dict[str, list[list[int]]] = {}  # tp -> [[start, end, tag], ...] in offset order
        self.recent: dict[str, deque[int]] = {}  # tp -> the last offsets given (shown)
        self.total = 0

    def add(self, tp: str, offsets: list[int], tag: int) -> None:
        """Count `offsets` (ascending: one Fetch answer's records of `tp`) as given."""
        runs = self.runs.setdefault(tp, [])
        for o in offsets:
            last = runs[-1] if runs else None
            if last is not None and last[1] == o and last[2] == tag:
                last[1] = o + 1
            else:
                runs.append([o, o + 1, tag])  # after a seek back, runs overlap: a second delivery counts twice
        del runs[: max(0, len(runs) - RUNS_MAX)]
        self.recent.setdefault(tp, deque(maxlen=RECEIVED_MAX)).extend(offsets)
        self.total += len(offsets)

    def take_back(self, tp: str, from_offset: int, before_tag: int | None = None) -> set[int]:
        """The records of `tp` at or past `from_offset` (fetched before SyncGroup answer `before_tag`, when given) no
        longer count: the client dropped them. The offsets taken back."""
        runs = self.runs.get(tp)
        if not runs:
            return set()
        gone: set[int] = set()
        count = 0
        kept_runs = []
        for start, end, tag in runs:
            if end <= from_offset or (before_tag is not None and tag >= before_tag):
                kept_runs.append([start, end, tag])
                continue
            if start < from_offset:
                kept_runs.append([start, from_offset, tag])
            gone.update(range(max(start, from_offset), end))
            count += end - max(start, from_offset)
        if not count:
            return gone
        self.runs[tp] = kept_runs
        self.total -= count
        recent = self.recent.get(tp)
        if recent is not None:
            self.recent[tp] = deque((o for o in recent if o not in gone), maxlen=RECEIVED_MAX)
        return gone
