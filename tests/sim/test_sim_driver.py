"""SimBackend end to end: the behaviours the scenario library relies on, step by step."""

import json

import pytest

from playground.engine.backend import BackendError
from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec, ClusterSpec, Step, TopicSpec
from playground.scenario.engines import make_backend
from playground.sim.driver import SimBackend


def backend(topics=None, actors=None, config=None, seed=0, brokers=3):
    topics = topics or {"orders": 3}
    spec = ClusterSpec(brokers=brokers, config=config or {}, topics=tuple(TopicSpec(n, p) for n, p in topics.items()))
    specs = {}
    for name, (kind, conf, *rest) in (actors or {}).items():
        specs[name] = ActorSpec(name, kind, conf, tuple(rest[0]) if rest else ())
    return SimBackend(spec, specs, seed=seed)


def run(b, *steps):
    outcomes = []
    for step in steps:
        label, args = (step, {}) if isinstance(step, str) else step
        actor, action = label.split(".")
        outcomes.append(b.apply(Step(actor, action, args)))
    return outcomes


def log_of(obs, tp):
    return [e.get("value", e.get("control")) for e in obs["partitions"][tp]["log"]]


TXN = {"transactional.id": "order-pay"}
RC = (CONSUMER, {"isolation.level": "read_committed"}, ["orders"])
RU = (CONSUMER, {"isolation.level": "read_uncommitted"}, ["orders"])


def test_it_is_what_make_backend_returns_for_sim():
    b = make_backend("sim", ClusterSpec(topics=(TopicSpec("orders", 1),)), {})
    assert isinstance(b, SimBackend) and b.name == "sim"


def test_it_shows_commit_to_both_isolation_levels_and_abort_only_to_read_uncommitted():
    b = backend(actors={"A": (PRODUCER, TXN), "rc": RC, "ru": RU})
    steps = ["A.init_transactions", "A.begin_transaction"]
    steps += [("A.produce", {"topic": "orders", "partition": p, "value": f"c{p}"}) for p in range(3)]
    steps += ["A.commit_transaction", "A.begin_transaction"]
    steps += [("A.produce", {"topic": "orders", "partition": p, "value": f"a{p}"}) for p in range(3)]
    steps += ["A.abort_transaction", "rc.poll", "ru.poll"]
    assert set(run(b, *steps)) == {"ok"}
    obs = b.observe()
    for p in range(3):
        assert log_of(obs, f"orders-{p}") == [f"c{p}", "COMMIT", f"a{p}", "ABORT"]
        assert obs["consumers"]["rc"][f"orders-{p}"] == [f"c{p}"]
        assert obs["consumers"]["ru"][f"orders-{p}"] == [f"c{p}", f"a{p}"]
        part = obs["partitions"][f"orders-{p}"]
        assert part["high_watermark"] == part["last_stable_offset"] == part["log_end_offset"] == 4
    assert obs["transactions"]["order-pay"]["state"] == "CompleteAbort"


def test_it_fences_the_first_instance_when_a_second_one_inits_with_the_same_id():
    b = backend(actors={"A": (PRODUCER, TXN), "B": (PRODUCER, TXN), "rc": RC})
    out = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "txn1-p0"}),
        "B.init_transactions",
        "A.commit_transaction",
        "rc.poll",
    )
    assert out == ["ok", "ok", "ok", "ok", "_FENCED", "ok"]
    obs = b.observe()
    assert log_of(obs, "orders-0") == ["txn1-p0", "ABORT"]
    assert obs["partitions"]["orders-0"]["log"][1]["epoch"] == 1
    assert obs["transactions"]["order-pay"] == {"state": "Empty", "producer_id": 0, "epoch": 2}
    assert obs["consumers"]["rc"]["orders-0"] == []
    view = b.view()
    assert view["producers"]["A"]["fenced"] and view["producers"]["A"]["state"] == "FATAL_ERROR"
    assert view["producers"]["A"]["last_error"]["error"] == "_FENCED"


def test_it_fences_a_zombie_at_send_and_at_send_offsets():
    b = backend(actors={"A": (PRODUCER, TXN), "B": (PRODUCER, TXN), "cin": (CONSUMER, {"group.id": "g"}, ["orders"])})
    out = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "x"}),
        "B.init_transactions",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "late"}),
    )
    assert out[-1] == "INVALID_PRODUCER_EPOCH"
    b2 = backend(actors={"A": (PRODUCER, TXN), "B": (PRODUCER, TXN), "cin": (CONSUMER, {"group.id": "g"}, ["orders"])})
    out = run(
        b2,
        "A.init_transactions",
        "A.begin_transaction",
        "cin.poll",
        "B.init_transactions",
        ("A.send_offsets_to_transaction", {"consumer": "cin"}),
    )
    assert out[-1] == "ok"  # nothing consumed yet: librdkafka sends nothing
    run(b2, ("A.produce", {"topic": "orders", "partition": 1, "value": "x", "await": False}))
    assert run(b2, "A.commit_transaction") == ["_FENCED"]


def test_it_counts_what_the_app_believes_against_what_landed_for_fire_and_forget_sends():
    b = backend(actors={"A": (PRODUCER, TXN), "M": (PRODUCER, TXN), "rc": RC})
    steps = ["A.init_transactions", "A.begin_transaction"]
    steps += [
        ("A.produce", {"topic": "orders", "partition": i % 3, "value": f"o{i}", "await": False}) for i in range(6)
    ]
    steps += ["M.init_transactions", "A.commit_transaction", "rc.poll"]
    out = run(b, *steps)
    assert out[-2] == "_FENCED"
    counters = b.view()["producers"]["A"]["counters"]
    assert counters["app_sent_ok"] == 6
    assert counters["read_committed_received"] == 0
    assert counters["landed"] < 6 or b.observe()["consumers"]["rc"] == {f"orders-{p}": [] for p in range(3)}


def test_it_does_not_fence_producers_with_separate_ids():
    b = backend(
        actors={
            "A": (PRODUCER, {"transactional.id": "order-pay"}),
            "M": (PRODUCER, {"transactional.id": "order-monitor"}),
            "rc": RC,
        }
    )
    out = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "o", "await": False}),
        "M.init_transactions",
        "M.begin_transaction",
        ("M.produce", {"topic": "orders", "partition": 1, "value": "hb"}),
        "M.commit_transaction",
        "A.commit_transaction",
        "rc.poll",
    )
    assert set(out) == {"ok"}
    assert b.observe()["consumers"]["rc"]["orders-0"] == ["o"]


def test_it_holds_back_a_plain_send_behind_an_open_transaction_then_shows_it_after_the_abort():
    b = backend(topics={"orders": 1}, actors={"A": (PRODUCER, TXN), "plain": (PRODUCER, {}), "rc": RC})
    run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "t"}),
        ("plain.produce", {"topic": "orders", "partition": 0, "value": "plain"}),
        "rc.poll",
    )
    assert b.view()["partitions"]["orders-0"]["last_stable_offset"] == 0
    assert b.consumers["rc"].received == {}
    run(b, "A.abort_transaction", "rc.poll")
    assert b.observe()["consumers"]["rc"]["orders-0"] == ["plain"]


def test_it_lets_a_crashed_producers_transaction_block_the_lso_until_the_timeout_aborts_it():
    b = backend(
        topics={"orders": 1}, actors={"A": (PRODUCER, TXN), "B": (PRODUCER, {"transactional.id": "b"}), "rc": RC}
    )
    run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "a"}),
        "A.crash",
        "B.init_transactions",
        "B.begin_transaction",
        ("B.produce", {"topic": "orders", "partition": 0, "value": "b"}),
        "B.commit_transaction",
        "rc.poll",
    )
    obs = b.observe()  # observing must not time the transaction out
    assert obs["transactions"]["order-pay"]["state"] == "Ongoing"
    assert obs["partitions"]["orders-0"]["last_stable_offset"] == 0
    assert obs["consumers"]["rc"]["orders-0"] == []
    run(b, ("clock.advance", {"ms": 75_000}), "rc.poll")
    obs = b.observe()
    assert obs["transactions"]["order-pay"] == {"state": "CompleteAbort", "producer_id": 0, "epoch": 1}
    assert obs["consumers"]["rc"]["orders-0"] == ["b"]


def test_it_fences_a_producer_whose_transaction_timed_out():
    b = backend(actors={"A": (PRODUCER, TXN)})
    out = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "a"}),
        ("clock.advance", {"ms": 75_000}),
        ("A.produce", {"topic": "orders", "partition": 0, "value": "b"}),
        "A.commit_transaction",
    )
    assert out[-2:] == ["INVALID_PRODUCER_EPOCH", "_FENCED"]


def test_it_refuses_a_send_outside_a_transaction():
    b = backend(actors={"A": (PRODUCER, TXN)})
    assert run(
        b,
        ("A.produce", {"topic": "orders", "value": "x"}),
        "A.init_transactions",
        ("A.produce", {"topic": "orders", "value": "x"}),
    ) == ["_STATE", "ok", "_STATE"]


def test_it_expires_an_idle_transactional_id():
    b = backend(actors={"A": (PRODUCER, TXN), "R": (PRODUCER, TXN)})
    out = run(
        b,
        "A.init_transactions",
        ("clock.advance", {"ms": 7 * 86_400_000 + 3_600_000}),
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "x"}),
        "A.commit_transaction",
        "A.abort_transaction",
        "R.init_transactions",
    )
    assert out[3:] == ["_PURGE_QUEUE", "INVALID_PRODUCER_ID_MAPPING", "ok", "ok"]


def test_it_copies_exactly_once_with_offsets_in_the_transaction_across_a_crash():
    actors = {
        "src": (PRODUCER, {}),
        "T": (PRODUCER, {"transactional.id": "copier-0"}),
        "cin": (CONSUMER, {"group.id": "copier"}, ["in"]),
        "rc": (CONSUMER, {}, ["out"]),
    }
    b = backend(topics={"in": 1, "out": 1}, actors=actors)
    copy = [
        "T.begin_transaction",
        "cin.poll",
        ("T.produce", {"topic": "out", "from": "cin"}),
        ("T.send_offsets_to_transaction", {"consumer": "cin"}),
    ]
    out = run(
        b,
        ("src.produce", {"topic": "in", "value": "m1"}),
        ("src.produce", {"topic": "in", "value": "m2"}),
        "T.init_transactions",
        *copy,
        "T.commit_transaction",
        ("src.produce", {"topic": "in", "value": "m3"}),
        *copy,
        "T.crash",
        "cin.crash",
        "T.restart",
        "cin.restart",
        "T.init_transactions",
        ("clock.advance", {"ms": 46_000}),
        *copy,
        "T.commit_transaction",
        "rc.poll",
    )
    assert set(out) == {"ok"}
    obs = b.observe()
    assert obs["consumers"]["rc"]["out-0"] == ["m1", "m2", "m3"]
    assert obs["groups"] == {"copier": {"in-0": 3}}


def test_it_duplicates_without_transactions():
    actors = {
        "src": (PRODUCER, {}),
        "T": (PRODUCER, {}),
        "cin": (CONSUMER, {"group.id": "copier"}, ["in"]),
        "rc": (CONSUMER, {}, ["out"]),
    }
    b = backend(topics={"in": 1, "out": 1}, actors=actors)
    run(
        b,
        ("src.produce", {"topic": "in", "value": "m1"}),
        "cin.poll",
        ("T.produce", {"topic": "out", "from": "cin"}),
        "cin.crash",
        "cin.restart",
        ("clock.advance", {"ms": 46_000}),
        "cin.poll",
        ("T.produce", {"topic": "out", "from": "cin"}),
        "cin.commit",
        "rc.poll",
    )
    assert b.observe()["consumers"]["rc"]["out-0"] == ["m1", "m1"]


def test_it_shows_per_partition_visibility_when_one_partition_replicates_slowly():
    b = backend(actors={"A": (PRODUCER, TXN), "rc": RC}, config={"sim.broker.3.replication.latency.ms": 2000})
    steps = ["A.init_transactions", "A.begin_transaction"]
    steps += [("A.produce", {"topic": "orders", "partition": p, "value": f"v{p}", "await": False}) for p in range(3)]
    run(b, *steps, "A.commit_transaction", "rc.poll")
    seen = dict(b.consumers["rc"].received.items())
    assert set(seen) == {"orders-0", "orders-1"}  # orders-2's marker is not below its high watermark yet
    assert b.observe()["partitions"]["orders-2"]["last_stable_offset"] == 2


def test_it_completes_a_commit_when_the_coordinator_dies_before_the_markers():
    b = backend(actors={"A": (PRODUCER, TXN), "rc": RC})
    out = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "a"}),
        ("A.produce", {"topic": "orders", "partition": 1, "value": "b"}),
        "A.commit_transaction",
        ("broker.stop", {"coordinator_of": "order-pay"}),
        "rc.poll",
    )
    assert set(out) == {"ok"}
    obs = b.observe()
    assert obs["transactions"]["order-pay"]["state"] == "CompleteCommit"
    assert obs["consumers"]["rc"]["orders-0"] == ["a"] and obs["consumers"]["rc"]["orders-1"] == ["b"]
    assert any(e.kind == "coordinator.load" and e.resumed == ("order-pay",) for e in b.events)


def test_it_counts_the_cost_of_dynamic_transactional_ids():
    static = backend(topics={"orders": 1}, actors={"A": (PRODUCER, {"transactional.id": "s"})})
    run(
        static,
        "A.init_transactions",
        *[
            s
            for i in range(10)
            for s in (
                "A.begin_transaction",
                ("A.produce", {"topic": "orders", "value": f"m{i}"}),
                "A.commit_transaction",
            )
        ],
    )
    dynamic = backend(
        topics={"orders": 1}, actors={f"A{i}": (PRODUCER, {"transactional.id": f"order-{i}"}) for i in range(10)}
    )
    run(
        dynamic,
        *[
            s
            for i in range(10)
            for s in (
                f"A{i}.init_transactions",
                f"A{i}.begin_transaction",
                (f"A{i}.produce", {"topic": "orders", "value": f"m{i}"}),
                f"A{i}.commit_transaction",
                f"A{i}.close",
            )
        ],
    )
    static.observe()
    dynamic.observe()
    s, d = static.view()["stats"], dynamic.view()["stats"]
    assert (s["init_producer_id_calls"], s["transaction_state_records"]) == (1, 31)
    assert (d["init_producer_id_calls"], d["transaction_state_records"]) == (10, 40)
    assert s["markers_written"] == d["markers_written"] == 10


def test_it_keeps_to_the_documented_shapes_of_observe_and_view():
    b = backend(actors={"A": (PRODUCER, TXN), "rc": RC, "g": (CONSUMER, {"group.id": "grp"}, ["orders"])})
    run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "value": "v"}),
        "A.commit_transaction",
        "rc.poll",
        "g.poll",
        "g.commit",
    )
    obs = b.observe()
    json.dumps(obs)
    assert set(obs) == {"partitions", "consumers", "transactions", "groups"}
    part = obs["partitions"]["orders-0"]
    assert set(part) == {"log", "high_watermark", "last_stable_offset", "log_end_offset"}
    assert set(part["log"][0]) == {"offset", "key", "value", "producer_id", "epoch", "sequence", "transactional"}
    assert set(part["log"][1]) == {"offset", "control", "producer_id", "epoch"}
    assert obs["groups"] == {"grp": {"orders-0": 2, "orders-1": None, "orders-2": None}}  # never consumed there
    view = b.view(log_limit=1)
    json.dumps(view)
    assert {
        "backend",
        "time_ms",
        "brokers",
        "producers",
        "consumers",
        "transactions",
        "timeline",
        "unobservable",
        "partitions",
        "groups",
    } <= set(view)
    vp = view["partitions"]["orders-0"]
    assert {"topic", "partition", "leader", "log_start_offset", "window_start"} <= set(vp)
    assert vp["window_start"] == 1 and [e["fate"] for e in vp["log"]] == ["marker"]
    assert set(view["producers"]["A"]) >= {
        "transactional_id",
        "producer_id",
        "epoch",
        "state",
        "last_error",
        "fenced",
        "counters",
    }
    assert set(view["consumers"]["rc"]) >= {"isolation_level", "group_id", "topics", "state", "positions", "received"}
    assert set(view["transactions"]["order-pay"]) == {
        "state",
        "producer_id",
        "epoch",
        "partitions",
        "timeout_ms",
        "coordinator_partition",
        "coordinator_broker",
        "txn_start_time_ms",
        "pending_state",
    }
    assert view["timeline"] and set(view["timeline"][0]) == {
        "seq",
        "time_ms",
        "rpc",
        "src",
        "dst",
        "direction",
        "error",
        "detail",
    }


def test_it_gives_the_same_events_for_the_same_seed_and_steps():
    def events():
        b = backend(actors={"A": (PRODUCER, TXN), "B": (PRODUCER, TXN), "rc": RC}, seed=5)
        run(
            b,
            "A.init_transactions",
            "A.begin_transaction",
            ("A.produce", {"topic": "orders", "value": "x", "await": False}),
            "B.init_transactions",
            "A.commit_transaction",
            "rc.poll",
            ("broker.stop", {"broker": 2}),
            "B.begin_transaction",
            ("B.produce", {"topic": "orders", "value": "y"}),
            "B.commit_transaction",
        )
        b.observe()
        return [e.to_dict() for e in b.events]

    assert events() == events()


def test_it_raises_backend_error_for_what_is_not_kafkas_problem():
    b = backend(actors={"A": (PRODUCER, TXN)})
    with pytest.raises(BackendError):
        b.apply(Step("nobody", "init_transactions"))
    with pytest.raises(BackendError):
        b.apply(Step("A", "fly"))
    with pytest.raises(BackendError):
        b.apply(Step("broker", "stop", {"broker": 9}))
    assert b.apply(Step("note", "note", {"text": {"en": "hi"}})) == "ok"


def test_it_adds_an_actor_to_a_running_session():
    b = backend(actors={"A": (PRODUCER, TXN)})
    b.add_actor(ActorSpec("C", PRODUCER, {"transactional.id": "order-pay"}))
    assert run(b, "A.init_transactions", "C.init_transactions") == ["ok", "ok"]
    assert b.view()["producers"]["C"]["epoch"] == 1


def test_it_forgets_the_last_error_of_a_restarted_instance():
    b = backend(actors={"A": (PRODUCER, TXN), "B": (PRODUCER, TXN), "rc": RC})
    out = run(
        b,
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 0, "value": "x"}),
        "B.init_transactions",
        "A.commit_transaction",
    )
    assert out[-1] == "_FENCED" and b.view()["producers"]["A"]["last_error"]["error"] == "_FENCED"
    assert run(b, "A.restart", "A.init_transactions") == ["ok", "ok"]
    card = b.view()["producers"]["A"]
    assert card["last_error"] is None and not card["fenced"] and card["state"] == "READY"
    assert card["fatal_error"] is None


def test_it_shows_a_fenced_send_offsets_to_transaction_as_fatal_on_the_card():
    b = backend(
        actors={
            "A": (PRODUCER, TXN),
            "B": (PRODUCER, TXN),
            "feed": (PRODUCER, {}),
            "cin": (CONSUMER, {"group.id": "g"}, ["incoming"]),
        },
        topics={"orders": 2, "incoming": 1},
    )
    out = run(
        b,
        ("feed.produce", {"topic": "incoming", "partition": 0, "value": "in-1"}),
        "cin.poll",
        "A.init_transactions",
        "A.begin_transaction",
        ("A.produce", {"topic": "orders", "partition": 1, "value": "a"}),
        "B.init_transactions",
        ("A.send_offsets_to_transaction", {"consumer": "cin"}),
        "A.commit_transaction",
    )
    assert out[-2:] == ["_FENCED", "_FENCED"]
    card = b.view()["producers"]["A"]
    assert card["state"] == "FATAL_ERROR" and card["fenced"] and card["fatal_error"] == "_FENCED"
    errors = [
        e for e in b.events if e.kind == "client.error" and e.actor == "A" and e.op == "send_offsets_to_transaction"
    ]
    assert errors and errors[0].fatal and not errors[0].txn_requires_abort
    assert any(t["rpc"] == "AddOffsetsToTxn" and t["error"] == "INVALID_PRODUCER_EPOCH" for t in b.view()["timeline"])
