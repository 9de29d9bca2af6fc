import json

from playground.engine import events as ev


def test_it_makes_every_event_a_frozen_record_with_seq_time_and_kind():
    event = ev.Marker(
        seq=3, time_ms=12, partition="orders-0", offset=5, control="COMMIT", producer_id=1, epoch=0, coordinator_epoch=1
    )
    assert event.to_dict() == {
        "seq": 3,
        "time_ms": 12,
        "kind": "log.marker",
        "partition": "orders-0",
        "offset": 5,
        "control": "COMMIT",
        "producer_id": 1,
        "epoch": 0,
        "coordinator_epoch": 1,
    }
    try:
        event.offset = 6  # type: ignore[misc]
    except AttributeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("events must be frozen")


def test_it_turns_tuples_into_lists_so_events_are_json():
    event = ev.TxnState(
        seq=1,
        time_ms=0,
        transactional_id="t",
        from_state="Empty",
        to_state="Ongoing",
        producer_id=0,
        epoch=0,
        partitions=("orders-0",),
        coordinator_broker=2,
        persisted=True,
        record_bytes=100,
    )
    assert json.loads(json.dumps(event.to_dict()))["partitions"] == ["orders-0"]


def test_it_has_one_class_per_kind():
    assert len(ev.KINDS) == len(ev.EVENT_TYPES)
    assert {
        "rpc",
        "txn.state",
        "log.append",
        "log.marker",
        "log.watermarks",
        "client.state",
        "client.error",
        "delivery",
        "consume",
        "group.offsets",
        "broker",
        "coordinator.load",
        "clock",
        "step",
    } <= set(ev.KINDS)


def test_a_watcher_gets_only_its_kinds_and_leaves_the_others_unbuilt():
    from playground.sim.cluster import Cluster

    cluster = Cluster(brokers=3, topics={"orders": 3}, keep_events=False)
    seen: list[ev.Event] = []
    cluster.watch((ev.Leader,), seen.append)
    assert not cluster.observed
    assert cluster.emit(ev.Clock, from_ms=0, to_ms=5) is None  # nobody keeps, listens to or watches clocks
    cluster.stop_broker(1)
    assert [e.partition for e in seen] == ["orders-0"]  # the partition broker 1 led
    assert all(isinstance(e, ev.Leader) for e in seen)
