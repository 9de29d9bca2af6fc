"""The worker process of a librdkafka actor: one confluent-kafka Producer or Consumer, driven by the parent's
requests (worker.py's protocol), answering with results, the client's log since the last answer and its state.

Follows confluent-kafka's API (Producer.init_transactions ... commit_transaction, Consumer.assign/poll/commit) and
reports Kafka and client errors as outcomes named as librdkafka names them (KafkaError.name(): _FENCED,
PRODUCER_FENCED, ...), never as exceptions.
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import sys
import time
from typing import Any

from playground.kafka.rdkafka_log import LogCollector, broker_error_names


def _outcome(exc: BaseException) -> dict[str, Any]:
    from confluent_kafka import KafkaException

    if isinstance(exc, KafkaException) and exc.args and hasattr(exc.args[0], "name"):
        err = exc.args[0]
        return {
            "outcome": err.name(),
            "detail": err.str(),
            "fatal": bool(err.fatal()),
            "retriable": bool(err.retriable()),
            "txn_requires_abort": bool(err.txn_requires_abort()),
        }
    if isinstance(exc, BufferError):
        return {
            "outcome": "_QUEUE_FULL",
            "detail": str(exc),
            "fatal": False,
            "retriable": True,
            "txn_requires_abort": False,
        }
    raise exc


class _ProducerActor:
    def __init__(self, name: str, config: dict[str, Any], logger: logging.Logger) -> None:
        from confluent_kafka import Producer

        self.name = name
        self.conf = dict(config)
        self.transactional = "transactional.id" in self.conf
        self.ignored: list[str] = []
        self.p = _make_client(Producer, self.conf, logger, self.ignored)
        self.app_sent_ok = 0
        self.deliveries: list[dict[str, Any]] = []
        self.closed = False
        self.raised: list[dict[str, Any]] = []  # errors poll()/flush() raised (a fatal error surfaces there first)

    def _poll(self, timeout: float) -> None:
        """poll(), but an exception it raises (confluent-kafka raises a fatal error such as _FENCED from poll
        before the delivery reports are served) is recorded and polling goes on: the delivery report still
        comes, with the broker's error for that record."""
        try:
            self.p.poll(timeout)
        except Exception as e:
            try:
                self.raised.append(_outcome(e))
            except Exception:
                self.raised.append({"outcome": "_FAIL", "detail": str(e)})

    def idle(self) -> None:
        if not self.closed:
            self._poll(0)

    def state(self) -> dict[str, Any]:
        raised, self.raised = self.raised, []
        return {"queue": 0 if self.closed else len(self.p), "app_sent_ok": self.app_sent_ok, "raised": raised}

    def _dr(self, ctx: dict[str, Any]):
        def cb(err, msg):
            d = {
                "topic": msg.topic(),
                "partition": msg.partition(),
                "offset": msg.offset() if err is None else None,
                "value": _text(msg.value()),
                "error": None if err is None else err.name(),
                "await": ctx["await"],
            }
            if err is None and ctx["await"]:
                self.app_sent_ok += 1
            ctx["done"] = True
            ctx["delivery"] = d
            self.deliveries.append(d)

        return cb

    def op_init_transactions(self, timeout_s: float) -> dict[str, Any]:
        self.p.init_transactions(timeout_s)
        return {"outcome": "ok"}

    def op_begin_transaction(self, timeout_s: float) -> dict[str, Any]:
        self.p.begin_transaction()
        return {"outcome": "ok"}

    def op_produce(
        self, timeout_s: float, topic: str, partition: int | None, key: str | None, value: str | None, wait: bool = True
    ) -> dict[str, Any]:
        ctx: dict[str, Any] = {"done": False, "await": wait}
        kwargs: dict[str, Any] = {"on_delivery": self._dr(ctx)}
        if partition is not None:
            kwargs["partition"] = partition
        self.p.produce(
            topic, value=None if value is None else value.encode(), key=None if key is None else key.encode(), **kwargs
        )
        if not wait:
            # fire and forget: the application believes it sent the record once produce() returned
            self.app_sent_ok += 1
            self._poll(0)
            return {"outcome": "ok", "delivery": None}
        deadline = time.monotonic() + timeout_s
        while not ctx["done"] and time.monotonic() < deadline:
            self._poll(0.02)
        if not ctx["done"]:
            return {"outcome": "_TIMED_OUT", "detail": "no delivery report within the step's time", "delivery": None}
        d = ctx["delivery"]
        return {"outcome": d["error"] or "ok", "delivery": d}

    def op_produce_many(self, timeout_s: float, records: list[dict[str, Any]], wait: bool = True) -> dict[str, Any]:
        """`produce: {from: CONSUMER}`: every record of the consumer's last poll, then (await) every report."""
        ctxs = []
        for r in records:
            ctx: dict[str, Any] = {"done": False, "await": wait}
            kwargs: dict[str, Any] = {"on_delivery": self._dr(ctx)}
            if r.get("partition") is not None:
                kwargs["partition"] = r["partition"]
            v, k = r.get("value"), r.get("key")
            self.p.produce(
                r["topic"], value=None if v is None else v.encode(), key=None if k is None else k.encode(), **kwargs
            )
            ctxs.append(ctx)
            if not wait:
                self.app_sent_ok += 1
        if not wait:
            self._poll(0)
            return {"outcome": "ok", "deliveries": []}
        deadline = time.monotonic() + timeout_s
        while not all(c["done"] for c in ctxs) and time.monotonic() < deadline:
            self._poll(0.02)
        if not all(c["done"] for c in ctxs):
            return {"outcome": "_TIMED_OUT", "detail": "delivery reports missing", "deliveries": []}
        errs = [c["delivery"]["error"] for c in ctxs if c["delivery"]["error"]]
        return {"outcome": errs[0] if errs else "ok", "deliveries": [c["delivery"] for c in ctxs]}

    def op_flush(self, timeout_s: float) -> dict[str, Any]:
        left = self.p.flush(timeout_s)
        return {"outcome": "ok" if left == 0 else "_TIMED_OUT", "left": left}

    def op_send_offsets_to_transaction(
        self, timeout_s: float, offsets: list[list[Any]], group_metadata: bytes
    ) -> dict[str, Any]:
        from confluent_kafka import TopicPartition

        tps = [TopicPartition(t, p, o) for t, p, o in offsets]
        self.p.send_offsets_to_transaction(tps, group_metadata, timeout_s)
        return {"outcome": "ok"}

    def op_commit_transaction(self, timeout_s: float) -> dict[str, Any]:
        self.p.commit_transaction(timeout_s)
        return {"outcome": "ok"}

    def op_abort_transaction(self, timeout_s: float) -> dict[str, Any]:
        self.p.abort_transaction(timeout_s)
        return {"outcome": "ok"}

    def op_close(self, timeout_s: float) -> dict[str, Any]:
        # confluent-kafka >= 2.16: close() aborts an open transaction, then flushes and destroys the client
        if not self.closed:
            self.p.close()
            self.closed = True
        return {"outcome": "ok"}

    def op_status(self, timeout_s: float) -> dict[str, Any]:
        if not self.closed:
            self._poll(0)
        return {"outcome": "ok"}

    def shutdown(self) -> None:
        if not self.closed:
            try:
                self.p.close()
            except Exception:
                pass
            self.closed = True


class _ConsumerActor:
    def __init__(self, name: str, config: dict[str, Any], logger: logging.Logger) -> None:
        from confluent_kafka import Consumer

        self.name = name
        self.conf = dict(config)
        self.ignored: list[str] = []
        self.c = _make_client(Consumer, self.conf, logger, self.ignored)
        self.assigned: list[tuple[str, int]] = []
        self.from_committed = False
        self.subscribed = False  # a group member (subscribe()): the group's rebalances assign its partitions
        self.rebalancing = False  # from a revoke to the next assignment (the eager protocol gives up everything)
        self.topics: list[str] = []  # what it subscribes to, at its first poll
        self.pos: dict[tuple[str, int], int] = {}
        self.closed = False

    def idle(self) -> None:
        pass

    def state(self) -> dict[str, Any]:
        return {"positions": [[t, p, o] for (t, p), o in sorted(self.pos.items())]}

    def _sync_positions(self) -> None:
        from confluent_kafka import TopicPartition

        if not self.assigned:
            return
        for tp in self.c.position([TopicPartition(t, p) for t, p in self.assigned]):
            # librdkafka moves the position past control records and (read_committed) aborted data too
            if tp.offset >= 0:
                key = (tp.topic, tp.partition)
                self.pos[key] = max(self.pos.get(key, 0), tp.offset)

    def op_subscribe(self, timeout_s: float, topics: list[str]) -> dict[str, Any]:
        """Group management (a static member's, KIP-345): the partitions come with the group's rebalances, which
        consume() serves; each starts at the group's committed offset. subscribe() itself is called at the first
        poll: librdkafka joins the group from its background thread as soon as it is called, and a consumer of a
        scenario (as the simulator's) joins when it first polls, not when its process starts."""
        self.subscribed = True
        self.topics = topics
        self.from_committed = True
        self.assigned = []
        self.pos = {}
        return {"outcome": "ok"}

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self.rebalancing = False

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self.rebalancing = True

    def _follow_assignment(self) -> bool:
        """A group member's partitions as its last rebalance left them (positions of those it lost are dropped,
        those it gained are resolved again); True when it has some."""
        if self.subscribed:
            now = sorted((tp.topic, tp.partition) for tp in self.c.assignment())
            if now != self.assigned:
                self.pos = {k: v for k, v in self.pos.items() if k in now}
                self.assigned = now
        return bool(self.assigned)

    def op_assign(self, timeout_s: float, partitions: list[list[Any]], from_committed: bool) -> dict[str, Any]:
        """Manual assignment of every partition of the consumer's topics (no rebalance: deterministic). A group
        consumer starts at the group's committed offsets (librdkafka fetches them when it starts fetching, with
        require_stable, so offsets of a transaction still open are waited for), any other at the beginning."""
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_STORED, TopicPartition

        start = OFFSET_STORED if from_committed else OFFSET_BEGINNING
        self.c.assign([TopicPartition(t, p, start) for t, p in partitions])
        self.assigned = [(t, p) for t, p in partitions]
        self.from_committed = from_committed
        self.pos = {}  # unknown until the first poll resolves it
        return {"outcome": "ok"}

    def _resolve_start(self, timeout_s: float) -> None:
        """Positions not known yet: the committed offset (group consumers; auto.offset.reset=earliest without
        one) or the partition's first offset."""
        from confluent_kafka import TopicPartition

        missing = [k for k in self.assigned if k not in self.pos]
        if not missing:
            return
        committed: dict[tuple[str, int], int] = {}
        if self.from_committed:
            for tp in self._committed([TopicPartition(t, p) for t, p in missing], timeout_s):
                if tp.error is None and tp.offset >= 0:
                    committed[(tp.topic, tp.partition)] = tp.offset
        for key in missing:
            if key in committed:
                self.pos[key] = committed[key]
            else:
                lo, _hi = self.c.get_watermark_offsets(TopicPartition(*key), timeout=timeout_s, cached=False)
                self.pos[key] = lo

    def _committed(self, partitions: list[Any], timeout_s: float) -> list[Any]:
        """committed(), asked again while the group coordinator answers a retriable error: right after a cluster
        starts (or a coordinator moves) OffsetFetch gets NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS until
        __consumer_offsets is loaded, which librdkafka raises instead of retrying. An application asks again."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self.c.committed(partitions, timeout=max_(deadline - time.monotonic(), 0.5))
            except KafkaException as e:
                err = e.args[0]
                if not (err.retriable() or err.name() in COORDINATOR_MOVING) or time.monotonic() + 0.2 >= deadline:
                    raise
                time.sleep(0.2)

    def op_poll(self, timeout_s: float, max: int | None = None, settle_s: float | None = None) -> dict[str, Any]:
        """Return what is available now, up to `max` records: consume until every assigned partition's position
        reaches the end offset at this consumer's isolation level (the LSO for read_committed, the high watermark
        otherwise; librdkafka's ListOffsets uses the consumer's isolation.level), or `settle_s` passes."""
        from confluent_kafka import TopicPartition

        started = time.monotonic()
        # the loop ends as soon as every partition is caught up; the bound only matters when it cannot be
        deadline = started + (settle_s if settle_s is not None else max_(timeout_s - 1.0, 1.0))
        got: list[dict[str, Any]] = []
        errors: list[str] = []

        def consume() -> None:
            n = 100 if max is None else min(100, max - len(got))
            for m in self.c.consume(n, 0.1):
                err = m.error()
                if err is not None:
                    if err.code() != -191:  # _PARTITION_EOF is not an error
                        errors.append(err.name())
                    continue
                key = (m.topic(), m.partition())
                got.append(
                    {
                        "topic": m.topic(),
                        "partition": m.partition(),
                        "offset": m.offset(),
                        "key": _text(m.key()),
                        "value": _text(m.value()),
                    }
                )
                self.pos[key] = builtins.max(self.pos.get(key, 0), m.offset() + 1)  # `max` is a parameter here

        if self.subscribed and self.topics:
            self.c.subscribe(self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke)
            self.topics = []
        elif self.subscribed:
            # serve what the group queued meanwhile: after a heartbeat answered REBALANCE_IN_PROGRESS, the revoke
            # (confluent-kafka always sets a rebalance callback, so librdkafka rejoins only once it is served)
            consume()
        # a group member has its partitions once its group's rebalance has run in consume(); a fatal error (a
        # static member fenced) leaves it none
        while (
            (self.rebalancing or not self._follow_assignment())
            and time.monotonic() < deadline
            and "_FATAL" not in errors
        ):
            if max is not None and len(got) >= max:
                break
            consume()
        self._resolve_start(min(timeout_s, 5.0))
        ends = {}
        for t, p in self.assigned:
            _lo, hi = self.c.get_watermark_offsets(TopicPartition(t, p), timeout=min(timeout_s, 5.0), cached=False)
            ends[(t, p)] = hi

        def caught_up() -> bool:
            return all(self.pos.get(k, 0) >= e for k, e in ends.items())

        while time.monotonic() < deadline:
            if max is not None and len(got) >= max:
                break
            if self.subscribed and (self.rebalancing or not self._follow_assignment()):
                break  # a rebalance began meanwhile: the next poll follows it
            self._sync_positions()
            if caught_up():
                break
            consume()
        self._sync_positions()
        out = {
            "outcome": "ok",
            "records": got,
            "ends": [[t, p, e] for (t, p), e in ends.items()],
            "caught_up": caught_up(),
            "errors": errors,
        }
        if self.subscribed:
            out["generation"] = generation_of(self.c.consumer_group_metadata())
        return out

    def op_positions(self, timeout_s: float) -> dict[str, Any]:
        self._resolve_start(min(timeout_s, 5.0))
        self._sync_positions()
        return {"outcome": "ok", "positions": [[t, p, o] for (t, p), o in sorted(self.pos.items())]}

    def op_group_metadata(self, timeout_s: float) -> dict[str, Any]:
        # positions as the application knows them: only partitions it has polled (as librdkafka's position())
        self._sync_positions()
        return {
            "outcome": "ok",
            "group_metadata": self.c.consumer_group_metadata(),
            "positions": [[t, p, o] for (t, p), o in sorted(self.pos.items())],
        }

    def op_commit(self, timeout_s: float) -> dict[str, Any]:
        """commit(): the current positions of the partitions this consumer has polled; none -> _NO_OFFSET, as
        librdkafka says when there is nothing to commit."""
        from confluent_kafka import TopicPartition

        self._sync_positions()
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(self.pos.items()) if o >= 0]
        if not tps:
            return {"outcome": "_NO_OFFSET", "detail": "Local: No offset stored", "committed": []}
        res = self.c.commit(offsets=tps, asynchronous=False)
        errs = [tp.error.name() for tp in res or [] if tp.error is not None]
        return {"outcome": errs[0] if errs else "ok", "committed": [[tp.topic, tp.partition, tp.offset] for tp in tps]}

    def op_seek_to_committed(self, timeout_s: float) -> dict[str, Any]:
        if self.subscribed:
            # the group owns the assignment: seek each partition back to the committed offset instead
            from confluent_kafka import TopicPartition

            self._follow_assignment()
            self.pos = {}
            self._resolve_start(min(timeout_s, 5.0))
            for (t, p), offset in self.pos.items():
                self.c.seek(TopicPartition(t, p, offset))
            return {"outcome": "ok"}
        # re-assigning (rather than seek) also drops what was pre-fetched for the old positions
        self.c.unassign()
        res = self.op_assign(timeout_s, [[t, p] for t, p in self.assigned], from_committed=self.from_committed)
        self._resolve_start(min(timeout_s, 5.0))
        return res

    def op_status(self, timeout_s: float) -> dict[str, Any]:
        return {"outcome": "ok"}

    def op_close(self, timeout_s: float) -> dict[str, Any]:
        if not self.closed:
            self.c.close()
            self.closed = True
        return {"outcome": "ok"}

    def shutdown(self) -> None:
        self.op_close(1.0)


def generation_of(metadata: bytes) -> int:
    """The generation in consumer_group_metadata()'s bytes (rd_kafka_consumer_group_metadata_write: the magic
    "CGMDv2:", then the generation id as a native int32, then the ids)."""
    return int.from_bytes(metadata[7:11], sys.byteorder, signed=True)


COORDINATOR_MOVING = ("NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE")


def max_(a: float, b: float) -> float:
    return a if a >= b else b


def _text(b: bytes | None) -> str | None:
    if b is None:
        return None
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError:
        return b.hex()


def _make_client(cls: Any, conf: dict[str, Any], logger: logging.Logger, ignored: list[str]) -> Any:
    """Create the client; settings librdkafka does not know (broker-side settings in a scenario's cluster config)
    are dropped and reported instead of failing the actor."""
    from confluent_kafka import KafkaException

    conf = dict(conf)
    for _ in range(50):
        try:
            return cls({**conf, "logger": logger})
        except (KafkaException, ValueError, TypeError) as e:
            m = re.search(r'No such configuration property: "([^"]+)"', str(e))
            if not m or m.group(1) not in conf:
                raise
            ignored.append(m.group(1))
            conf.pop(m.group(1))
    raise RuntimeError("too many unknown settings")


def worker_main(conn: Any, kind: str, name: str, config: dict[str, Any]) -> None:  # runs in the child
    import warnings

    # e.g. "abort_transaction failed during close" for a fenced producer: the parent already knows
    warnings.simplefilter("ignore")
    try:
        os.setpgid(0, 0)  # own process group: signals aimed at the server's group do not reach librdkafka here
    except OSError:
        pass
    logger = logging.getLogger(f"playground.kafka.actor.{name}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    collector = LogCollector(broker_error_names())
    logger.addHandler(collector)
    try:
        actor: Any = (_ProducerActor if kind == "producer" else _ConsumerActor)(name, config, logger)
    except Exception as e:  # bad configuration: report it, then exit
        conn.send({"id": None, "ok": False, "error": f"cannot create the client: {e}"})
        return
    conn.send({"id": None, "ok": True, "result": {"ignored_settings": actor.ignored, "pid": os.getpid()}})
    while True:
        try:
            has = conn.poll(0.05)
        except (EOFError, OSError):
            break
        if not has:
            try:
                actor.idle()
            except Exception:
                pass
            continue
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            break
        op, args, rid = msg["op"], msg.get("args", {}), msg["id"]
        timeout_s = float(msg.get("timeout_s", 15.0))
        if op == "exit":
            try:
                actor.shutdown()
            finally:
                conn.send({"id": rid, "ok": True, "result": {"outcome": "ok"}, "logs": collector.drain()})
            break
        fn = getattr(actor, "op_" + op, None)
        if fn is None:
            conn.send({"id": rid, "ok": False, "error": f"unknown operation {op!r} for a {kind}"})
            continue
        try:
            result = fn(timeout_s, **args)
        except Exception as e:
            try:
                result = _outcome(e)
            except Exception as e2:
                conn.send({"id": rid, "ok": False, "error": f"{op}: {type(e2).__name__}: {e2}"})
                continue
        try:
            actor.idle()
        except Exception:
            pass
        result["state"] = actor.state()
        conn.send(
            {
                "id": rid,
                "ok": True,
                "result": result,
                "logs": collector.drain(),
                "txn_state": collector.txn_state,
                "pid_epochs": list(collector.pid_epochs),
            }
        )
