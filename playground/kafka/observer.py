"""What the real cluster holds, read from outside the actors: partition logs with control records, HW and LSO,
the transaction coordinator's state, committed group offsets. Also topic creation/deletion for a session.

Sources:
* logs: a raw Fetch at READ_UNCOMMITTED (`wire.WireClient.read_log`) that keeps control batches, so COMMIT/ABORT
  markers appear with their producer id, epoch and coordinator epoch;
* HW and LSO: ListOffsets(LATEST) at READ_UNCOMMITTED and READ_COMMITTED (confluent-kafka's AdminClient);
* the coordinator: DescribeTransactions (KIP-664, raw) for the current state, and `__transaction_state` read and
  decoded for every transition it persisted (with the record's size);
* group offsets: OffsetFetch through AdminClient.list_consumer_group_offsets, with require_stable when observing;
* groups: DescribeGroups through AdminClient.describe_consumer_groups (state, assignor, members with their client.id,
  host, group.instance.id and assignment), what `kafka-consumer-groups.sh --describe --members --verbose` prints.

Every call is bounded (request timeouts of a few seconds); failures become `ObserverError` with a sentence a user
can act on.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from playground.kafka.wire import (
    LogEntry,
    WireClient,
    WireError,
    decode_txn_key,
    decode_txn_value,
    transaction_state_partition,
)

REQUEST_TIMEOUT_S = 5.0
REACH_TIMEOUT_S = 3.0
PREPARE_STATES = ("PrepareCommit", "PrepareAbort", "PrepareEpochFence")
# confluent-kafka's ConsumerGroupState names -> the coordinator's (GroupState / ClassicGroupState)
GROUP_STATES = {
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
    "UNKNOWN": "Unknown",
}

_quiet = logging.getLogger("playground.kafka.librdkafka")
_quiet.setLevel(logging.CRITICAL)  # errors reach the user as ObserverError, not as log spam


class ObserverError(Exception):
    pass


def _kafka_msg(e: BaseException) -> str:
    if isinstance(e, KafkaException) and e.args and hasattr(e.args[0], "str"):
        err = e.args[0]
        return f"{err.name()}: {err.str()}"
    return str(e)


class Observer:
    def __init__(self, bootstrap: str, client_config: dict[str, Any], prefix: str) -> None:
        self.bootstrap = bootstrap
        self.prefix = prefix
        conf = {
            "bootstrap.servers": bootstrap,
            **client_config,
            "logger": _quiet,
            "socket.connection.setup.timeout.ms": 3000,
            "reconnect.backoff.max.ms": 1000,
        }
        protocol = str(client_config.get("security.protocol", "plaintext")).lower()
        self.raw_ok = protocol == "plaintext"
        self.admin = AdminClient(conf)
        self.wire = WireClient(bootstrap, timeout_s=REQUEST_TIMEOUT_S)
        self._logs: dict[tuple[str, int], list[LogEntry]] = {}
        self._txn_log_next: dict[int, int] = {}  # __transaction_state partition -> next offset to read
        self._txn_partitions: int | None = None
        self._txn_records: dict[str, list[dict[str, Any]]] = {}

    def close(self) -> None:
        self.wire.close()

    def _own(self, name: str) -> str:
        if not name.startswith(self.prefix):
            raise ObserverError(f"refusing {name!r}: outside this session's prefix {self.prefix!r}")
        return name

    # ------------------------------------------------------------------------------------- reachability

    def check_reachable(self) -> None:
        if not self.raw_ok:
            raise ObserverError(
                "the log observer reads partitions with its own PLAINTEXT Fetch client; this server's "
                "KAFKA_CLIENT_CONFIG asks for another security.protocol, which it does not support"
            )
        try:
            self.admin.list_topics(timeout=REACH_TIMEOUT_S)
            self.wire.metadata([])
        except (KafkaException, WireError) as e:
            raise ObserverError(
                f"Cannot reach the Kafka cluster configured in KAFKA_BOOTSTRAP_SERVERS ({self.bootstrap}): "
                f"{_kafka_msg(e)}. Is it running? (locally: bash tools/kafka/kafka.sh status)"
            ) from None

    def broker_ids(self) -> list[int]:
        try:
            return sorted(self.wire.metadata([]).brokers)
        except WireError as e:
            raise ObserverError(f"cluster metadata: {e}") from None

    # ------------------------------------------------------------------------------------- topics

    def create_topics(self, topics: dict[str, int], replication: int, config: dict[str, str] | None = None) -> None:
        if not topics:
            return
        new = [
            NewTopic(self._own(name), partitions, replication, config=dict(config or {}))
            for name, partitions in topics.items()
        ]
        try:
            futures = self.admin.create_topics(new, operation_timeout=10, request_timeout=15)
            for _name, fut in futures.items():
                try:
                    fut.result(timeout=20)
                except KafkaException as e:
                    # The session's prefix is fresh and recorded as this process's before any topic exists under
                    # it, so a topic that exists already is this very request's: on a loaded machine the admin
                    # client resends a CreateTopics whose answer came late, and the broker answers the resend so.
                    if not (e.args and getattr(e.args[0], "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS):
                        raise
        except (KafkaException, TimeoutError, Exception) as e:
            raise ObserverError(f"cannot create the session's topics: {_kafka_msg(e)}") from None
        deadline = time.monotonic() + 15
        while True:
            try:
                meta = self.wire.metadata(list(topics))
                ready = all(
                    (t, p) in meta.partitions and meta.partitions[(t, p)].leader >= 0
                    for t, n in topics.items()
                    for p in range(n)
                )
                # a leader named in one broker's metadata may not serve the partition yet: ask each one
                ready = ready and all(not self.wire.fetch(t, p, 0).error for t, n in topics.items() for p in range(n))
            except WireError:
                ready = False
            if ready:
                return
            if time.monotonic() > deadline:
                raise ObserverError("the session's topics were created but their leaders do not serve them after 15 s")
            time.sleep(0.1)

    def delete_session(self, topics: list[str], groups: list[str], timeout_s: float = 12.0) -> None:
        """Delete the session's topics and groups, all within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        errors = []
        if topics:
            try:
                futures = self.admin.delete_topics(
                    [self._own(t) for t in topics], operation_timeout=10, request_timeout=10
                )
                for fut in futures.values():
                    try:
                        fut.result(timeout=max(0.1, deadline - time.monotonic()))
                    except Exception as e:
                        errors.append(_kafka_msg(e))
            except ObserverError:
                raise
            except Exception as e:
                errors.append(_kafka_msg(e))
        if groups and time.monotonic() < deadline:
            try:
                futures = self.admin.delete_consumer_groups([self._own(g) for g in groups], request_timeout=5)
                for fut in futures.values():
                    try:
                        fut.result(timeout=max(0.1, deadline - time.monotonic()))
                    except Exception:
                        pass
            except ObserverError:
                raise
            except Exception:
                pass
        if errors:
            raise ObserverError("deleting the session's topics: " + "; ".join(errors[:3]))

    def check_alive(self) -> None:
        """One metadata round trip, bounded: the cluster answers, or a clear ObserverError."""
        try:
            self.wire.metadata([])
        except WireError as e:
            raise ObserverError(
                f"The Kafka cluster configured in KAFKA_BOOTSTRAP_SERVERS ({self.bootstrap}) does not answer: {e}"
            ) from None

    # ------------------------------------------------------------------------------------- brokers

    def coordinator_of(self, transactional_id: str) -> int:
        try:
            return self.wire.find_coordinator(self._own(transactional_id), 1)
        except WireError as e:
            raise ObserverError(str(e)) from None

    def leader_of(self, topic: str, partition: int) -> int:
        try:
            return self.wire.leader(self._own(topic), partition, refresh=True)
        except WireError as e:
            raise ObserverError(f"no leader for {topic}-{partition}: {e}") from None

    def wait_broker(self, broker: int, up: bool, timeout_s: float) -> bool:
        """Until the cluster's metadata lists (up) or no longer lists (down) the broker and every partition of the
        session has a leader. Bounded; False when time ran out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                meta = self.wire.metadata(None)
                listed = broker in meta.brokers
                leaders_ok = all(
                    pm.leader >= 0 and (up or pm.leader != broker)
                    for (t, _p), pm in meta.partitions.items()
                    if t.startswith(self.prefix) or t == "__transaction_state"
                )
                if listed == up and leaders_ok:
                    return True
            except WireError:
                pass
            time.sleep(0.2)
        return False

    # ------------------------------------------------------------------------------------- reading

    def _offsets(self, tps: list[tuple[str, int]], committed: bool) -> dict[tuple[str, int], int | None]:
        if not tps:
            return {}
        req = {TopicPartition(t, p): OffsetSpec.latest() for t, p in tps}
        iso = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        out: dict[tuple[str, int], int | None] = {}
        try:
            futures = self.admin.list_offsets(req, isolation_level=iso, request_timeout=REQUEST_TIMEOUT_S)
        except KafkaException as e:
            raise ObserverError(f"ListOffsets: {_kafka_msg(e)}") from None
        for tp, fut in futures.items():
            try:
                out[(tp.topic, tp.partition)] = fut.result(timeout=REQUEST_TIMEOUT_S + 1).offset
            except Exception:
                out[(tp.topic, tp.partition)] = None
        return out

    def stable_offsets(self, tps: list[tuple[str, int]]) -> dict[tuple[str, int], int | None]:
        """The last stable offset of each partition (ListOffsets at read_committed: what such a consumer's end is)."""
        return self._offsets([(self._own(t), p) for t, p in tps], committed=True)

    def read_log(self, topic: str, partition: int) -> tuple[list[LogEntry], dict[str, Any]]:
        """The partition's log (cached; only what is new is fetched) and the Fetch response's marks."""
        key = (self._own(topic), partition)
        cached = self._logs.setdefault(key, [])
        start = cached[-1].next_offset if cached else 0
        try:
            fp, new = self.wire.read_log(topic, partition, start=start)
        except WireError as e:
            raise ObserverError(f"reading {topic}-{partition}: {e}") from None
        if fp.log_start_offset > start and cached:
            cached[:] = [e for e in cached if e.offset >= fp.log_start_offset]
        cached.extend(e for e in new if not cached or e.offset >= cached[-1].next_offset)
        known = self.wire.meta.partitions.get(key) if self.wire.meta else None
        leader = known.leader if known is not None else None
        return list(cached), {
            "high_watermark": fp.high_watermark,
            "last_stable_offset": fp.last_stable_offset,
            "log_start_offset": fp.log_start_offset,
            "leader": leader,
        }

    def describe_transactions(self, txids: list[str]) -> dict[str, dict[str, Any]]:
        try:
            out = self.wire.describe_transactions([self._own(t) for t in txids])
        except WireError as e:
            raise ObserverError(f"DescribeTransactions: {e}") from None
        n = self._txn_state_partitions()
        for txid, d in out.items():
            d["coordinator_partition"] = transaction_state_partition(txid, n)
        return out

    def describe_producers(self, topic: str, partition: int) -> list[dict[str, Any]]:
        try:
            return self.wire.describe_producers(self._own(topic), partition)
        except WireError as e:
            raise ObserverError(f"DescribeProducers {topic}-{partition}: {e}") from None

    def list_transactions(self) -> list[dict[str, Any]]:
        """ListTransactions on every broker, limited to this session's transactional ids."""
        try:
            return [t for t in self.wire.list_transactions() if t["transactional_id"].startswith(self.prefix)]
        except WireError as e:
            raise ObserverError(f"ListTransactions: {e}") from None

    def _txn_state_partitions(self) -> int:
        if self._txn_partitions is None:
            try:
                meta = self.wire.metadata(["__transaction_state"])
                n = sum(1 for (t, _p) in meta.partitions if t == "__transaction_state")
            except WireError:
                n = 0
            self._txn_partitions = n or 50
        return self._txn_partitions

    def transaction_log(self, txids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Every record `__transaction_state` holds for these transactional ids (decoded), read incrementally.
        Returns the records not returned before."""
        n = self._txn_state_partitions()
        wanted = {self._own(t) for t in txids}
        fresh: dict[str, list[dict[str, Any]]] = {t: [] for t in wanted}
        for part in sorted({transaction_state_partition(t, n) for t in wanted}):
            start = self._txn_log_next.get(part, 0)
            try:
                _fp, entries = self.wire.read_log("__transaction_state", part, start=start)
            except WireError as e:
                raise ObserverError(f"reading __transaction_state-{part}: {e}") from None
            for entry in entries:
                if entry.control or entry.key is None:
                    continue
                try:
                    tid = decode_txn_key(entry.key)
                except Exception:
                    continue
                if tid not in wanted:
                    continue
                value = decode_txn_value(entry.value)
                rec: dict[str, Any] = {
                    "offset": entry.offset,
                    "txn_partition": part,
                    "record_bytes": len(entry.key) + len(entry.value or b""),
                }
                if value is None:
                    rec.update(state="Dead", producer_id=-1, epoch=-1, partitions=[], tombstone=True)
                else:
                    rec.update(value)
                self._txn_records.setdefault(tid, []).append(rec)
                fresh[tid].append(rec)
            if entries:
                self._txn_log_next[part] = entries[-1].next_offset
        return fresh

    def group_offsets(self, group: str, tps: list[tuple[str, int]], stable: bool) -> dict[tuple[str, int], int | None]:
        req = [ConsumerGroupTopicPartitions(self._own(group), [TopicPartition(t, p) for t, p in tps])]
        try:
            futures = self.admin.list_consumer_group_offsets(
                req, require_stable=stable, request_timeout=REQUEST_TIMEOUT_S
            )
            res = futures[group].result(timeout=REQUEST_TIMEOUT_S + 1)
        except Exception as e:
            raise ObserverError(f"OffsetFetch for group {group}: {_kafka_msg(e)}") from None
        out: dict[tuple[str, int], int | None] = {}
        for tp in res.topic_partitions:
            out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else None
        return out

    def describe_groups(self, groups: list[str]) -> dict[str, dict[str, Any]]:
        """DescribeGroups: each group's state (Kafka's names), assignor and members. A classic group's generation is
        not in DescribeGroupsResponse (nor a KIP-848 group's epoch in what confluent-kafka's AdminClient gives)."""
        if not groups:
            return {}
        try:
            futures = self.admin.describe_consumer_groups(
                [self._own(g) for g in groups], request_timeout=REQUEST_TIMEOUT_S
            )
            found = {g: futures[self._own(g)].result(timeout=REQUEST_TIMEOUT_S + 1) for g in groups}
        except Exception as e:
            raise ObserverError(f"DescribeGroups for {', '.join(groups)}: {_kafka_msg(e)}") from None
        out: dict[str, dict[str, Any]] = {}
        for g, d in found.items():
            state = getattr(d.state, "name", str(d.state))
            out[g] = {
                "state": GROUP_STATES.get(state, state.title()),
                "protocol": d.partition_assignor or "",
                "members": [
                    {
                        "member_id": m.member_id,
                        "client_id": m.client_id,
                        "host": m.host,
                        "instance_id": m.group_instance_id,
                        "assignment": [(tp.topic, tp.partition) for tp in m.assignment.topic_partitions],
                    }
                    for m in d.members
                ],
            }
        return out

    # ------------------------------------------------------------------------------------- together

    def wait_quiescent(self, txids: list[str], tps: list[tuple[str, int]], groups: list[str], deadline: float) -> bool:
        """Until no transaction is in Prepare* (its markers are written), every partition's LSO equals its high
        watermark unless an Ongoing transaction holds it, and (no transaction open) committed offsets answer with
        require_stable. Bounded by `deadline` (time.monotonic()); False if it passed first."""
        while True:
            ok = True
            desc = self.describe_transactions(txids) if txids else {}
            ongoing: set[tuple[str, int]] = set()
            for d in desc.values():
                if d.get("state") in PREPARE_STATES:
                    ok = False
                if d.get("state") == "Ongoing":
                    ongoing.update(tuple(x) for x in d.get("partitions", []))
            if ok and tps:
                hw = self._offsets(tps, committed=False)
                lso = self._offsets(tps, committed=True)
                for tp in tps:
                    high, stable = hw.get(tp), lso.get(tp)
                    if high is None or stable is None:
                        ok = False  # no leader right now (failover): not settled
                    elif stable < high and tp not in ongoing:
                        ok = False
            if ok and groups and not ongoing:
                for g in groups:
                    try:
                        self.group_offsets(g, tps, stable=True)
                    except ObserverError:
                        ok = False
            if ok:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)

    def snapshot(
        self,
        tps: dict[str, tuple[str, int]],
        txids: dict[str, str],
        groups: dict[str, tuple[str, list[tuple[str, int]]]],
        stable_groups: bool,
    ) -> dict[str, Any]:
        """Everything observable, keyed by the scenario's names (`tps`: scenario tp -> real (topic, partition),
        `txids`: scenario id -> real id, `groups`: scenario group -> (real group, real tps))."""
        reverse_tp = {v: k for k, v in tps.items()}
        self.check_alive()  # a dead cluster: one bounded error, instead of one timeout per request below
        hw = self._offsets(list(tps.values()), committed=False)
        lso = self._offsets(list(tps.values()), committed=True)
        partitions = {}
        for stp, (t, p) in tps.items():
            entries, marks = self.read_log(t, p)
            partitions[stp] = {
                "entries": entries,
                # ListOffsets answers are the reference; the Fetch's own marks stand in while a leader is missing
                "high_watermark": hw.get((t, p)) if hw.get((t, p)) is not None else marks["high_watermark"],
                "last_stable_offset": lso.get((t, p)) if lso.get((t, p)) is not None else marks["last_stable_offset"],
                "log_start_offset": marks["log_start_offset"],
                "leader": marks["leader"],
            }
        real_to_scn = {v: k for k, v in txids.items()}
        desc = self.describe_transactions(list(txids.values())) if txids else {}
        transactions = {real_to_scn[r]: d for r, d in desc.items()}
        fresh = self.transaction_log(list(txids.values())) if txids else {}
        txn_log = {real_to_scn[r]: recs for r, recs in fresh.items()}
        group_out: dict[str, dict[str, int | None]] = {}
        for g, (real, gtps) in groups.items():
            try:
                offs = self.group_offsets(real, gtps, stable=stable_groups)
            except ObserverError:
                if not stable_groups:
                    raise
                # an open transaction holds pending offsets: require_stable cannot answer; report what is committed
                offs = self.group_offsets(real, gtps, stable=False)
            group_out[g] = {reverse_tp[tp]: offs.get(tp) for tp in gtps}
        try:
            brokers = sorted(self.wire.metadata([]).brokers)
        except WireError as e:
            raise ObserverError(f"cluster metadata: {e}") from None
        return {
            "partitions": partitions,
            "transactions": transactions,
            "txn_log": txn_log,
            "groups": group_out,
            "brokers": brokers,
        }
