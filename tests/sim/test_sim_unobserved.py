"""A cluster nobody observes (keep_events=False, no listener) skips building most events, for speed. Nothing else
may change: the same run gives the same RPC timeline (sequence numbers included), logs and delivery reports."""

from playground.sim.client import Consumer, Producer, TopicPartition
from playground.sim.cluster import Cluster


def _run(cluster: Cluster) -> dict:
    reports = []
    producer = Producer({"transactional.id": "t", "linger.ms": 5}, cluster=cluster, name="P")
    producer.init_transactions()
    for n in range(6):
        producer.begin_transaction()
        for p in range(3):
            for i in range(4):
                producer.produce(
                    "orders",
                    f"{n}-{p}-{i}",
                    partition=p,
                    on_delivery=lambda err, msg: reports.append((err, msg.partition(), msg.offset())),
                )
        producer.flush()
        if n % 3 == 2:
            producer.abort_transaction()
        else:
            producer.commit_transaction()
    cluster.settle()
    consumer = Consumer({"isolation.level": "read_committed"}, cluster=cluster, name="C")
    consumer.assign([TopicPartition("orders", p, 0) for p in range(3)])
    read = [(m.partition(), m.offset(), m.value()) for m in consumer.consume(500, timeout=1)]
    return {
        "timeline": [e.to_dict() for e in cluster.timeline],
        "logs": [
            (tp, cluster.log(f"orders-{tp}").log_end_offset, cluster.log(f"orders-{tp}").last_stable_offset)
            for tp in range(3)
        ],
        "reports": reports,
        "read": read,
        "now_ms": cluster.now_ms,
    }


def test_an_unobserved_cluster_behaves_exactly_like_an_observed_one():
    kept = Cluster(3, {}, {"orders": 3}, seed=5)
    heard: list = []
    listened = Cluster(3, {}, {"orders": 3}, seed=5, keep_events=False, on_event=heard.append)
    silent = Cluster(3, {}, {"orders": 3}, seed=5, keep_events=False)
    expected = _run(kept)
    assert expected["timeline"] and expected["read"]
    assert _run(listened) == expected
    assert _run(silent) == expected
    assert [e.to_dict() for e in heard] == [e.to_dict() for e in kept.events]
    assert silent.events == []
