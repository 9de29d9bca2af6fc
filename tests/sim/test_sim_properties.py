"""Random command sequences against the simulated cluster (hypothesis stateful testing).

Several producers (two sharing a transactional id, one with its own, one plain idempotent producer), consumers
of both isolation levels and a group consumer, clock advances and broker stop/start. After every step:
- read_committed never delivered aborted or undecided data;
- LSO <= HW <= LEO on every partition, and the LSO is what Kafka's definition gives when recomputed from the log;
- a partition never takes a batch from an epoch older than one it has already seen for that producer id
  (a fenced epoch never appends);
and at the end, replaying the same seed and commands gives the identical event list.

Every playground profile (Kafka 3.9 / 4.x x librdkafka / kafka-clients) runs the same machine: one TestCase per
profile, the clients' state names mapped to the same "sensible next action".

Profiles: the default run is quick (HYPOTHESIS_PROFILE unset: 60 sequences of up to 40 steps under the default
Kafka profile, 30 under each other one); HYPOTHESIS_PROFILE=thorough runs 3000 sequences of up to 60 steps each.
"""

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from playground.engine.backend import BackendError
from playground.engine.spec import CONSUMER, DEFAULT_PROFILE, PRODUCER, ActorSpec, ClusterSpec, Profile, Step, TopicSpec
from playground.scenario.anomalies import History, check, reads
from playground.sim.driver import SimBackend
from playground.sim.log import COMMIT

PROFILES = {
    "default": {"max_examples": 60, "stateful_step_count": 40},
    "thorough": {"max_examples": 3000, "stateful_step_count": 60},
}
PROFILE = PROFILES[os.environ.get("HYPOTHESIS_PROFILE", "default")]
# the other Kafka profiles get half the sequences in the quick run (the suite's time budget)
OTHER_PROFILE = dict(PROFILE, max_examples=PROFILE["max_examples"] if PROFILE is PROFILES["thorough"] else 30)

TOPICS = {"orders": 3, "audit": 1}
ACTORS = {
    "A": ActorSpec("A", PRODUCER, {"transactional.id": "shared"}),
    "B": ActorSpec("B", PRODUCER, {"transactional.id": "shared"}),
    "C": ActorSpec("C", PRODUCER, {"transactional.id": "own", "transaction.timeout.ms": 20000}),
    "P": ActorSpec("P", PRODUCER, {}),
    "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, ("orders", "audit")),
    "ru": ActorSpec("ru", CONSUMER, {"isolation.level": "read_uncommitted"}, ("orders", "audit")),
    "g": ActorSpec("g", CONSUMER, {"group.id": "grp", "isolation.level": "read_committed"}, ("orders",)),
}
TXN_ONLY = (
    "init_transactions",
    "begin_transaction",
    "commit_transaction",
    "abort_transaction",
    "send_offsets_to_transaction",
)
PRODUCER_ACTIONS = [
    "init_transactions",
    "begin_transaction",
    "produce",
    "produce",
    "produce",
    "produce",
    "commit_transaction",
    "abort_transaction",
    "flush",
    "send_offsets_to_transaction",
    "crash",
    "restart",
    "close",
]


# The next thing an application does in a producer's state (librdkafka's state names and kafka-clients').
IN_TRANSACTION_ACTIONS = (
    ["produce"] * 12 + ["commit_transaction"] * 4 + ["abort_transaction"] * 3 + ["send_offsets_to_transaction"]
)
SENSIBLE = {
    "INIT": "init_transactions",
    "WAIT_PID": "init_transactions",
    "READY": "begin_transaction",
    "ABORTABLE_ERROR": "abort_transaction",
    "FATAL_ERROR": "restart",
    "IN_TRANSACTION": IN_TRANSACTION_ACTIONS,
    # kafka-clients (a timed-out call is resumed by calling it again)
    "UNINITIALIZED": "init_transactions",
    "INITIALIZING": "init_transactions",
    "COMMITTING_TRANSACTION": "commit_transaction",
    "ABORTING_TRANSACTION": "abort_transaction",
}


def new_backend(seed, profile=DEFAULT_PROFILE):
    spec = ClusterSpec(brokers=3, topics=tuple(TopicSpec(n, p) for n, p in TOPICS.items()))
    return SimBackend(spec, ACTORS, seed=seed, profile=profile)


class SimulatedCluster(RuleBasedStateMachine):
    profile = DEFAULT_PROFILE

    def __init__(self):
        super().__init__()
        self.seed = 11
        self.backend = new_backend(self.seed, self.profile)
        self.steps = []
        self.history = []  # the anomaly checker's view of the same run (playground/scenario/anomalies.py)
        self.max_epoch = {}  # (partition, producer id) -> highest epoch seen in an append or marker
        self.fence_violations = []
        self.backend.cluster.subscribe(self._watch)

    def _watch(self, event):
        if event.kind not in ("log.append", "log.marker") or event.producer_id < 0:
            return
        key = (event.partition, event.producer_id)
        seen = self.max_epoch.get(key, -1)
        if event.kind == "log.append" and event.epoch < seen:
            self.fence_violations.append(event.to_dict())
        self.max_epoch[key] = max(seen, event.epoch)

    def apply(self, step):
        self.steps.append(step)
        try:
            outcome = self.backend.apply(step)
        except BackendError:
            return  # e.g. a producer that crashed must restart first: not Kafka's business
        self.history.append(
            {
                "n": len(self.steps) - 1,
                "actor": step.actor,
                "action": step.action,
                "args": dict(step.args),
                "outcome": outcome,
                **reads(self.backend, step),
            }
        )

    @rule(
        kind=st.sampled_from(["producer"] * 10 + ["consumer"] * 5 + ["advance"] * 2 + ["broker"]),
        actor=st.integers(0, 3),
        sensible=st.integers(0, 3),
        action=st.sampled_from(PRODUCER_ACTIONS),
        consumer_action=st.sampled_from(["poll"] * 4 + ["commit", "crash", "seek_to_committed"]),
        partition=st.integers(0, 3),
        wait=st.booleans(),
        n=st.integers(0, 10_000),
        ms=st.sampled_from([1, 10, 600, 5_000, 21_000, 46_000, 75_000]),
    )
    def step(self, kind, actor, sensible, action, consumer_action, partition, wait, n, ms):
        if kind == "producer":
            self.producer(["A", "B", "C", "P"][actor], sensible > 0, action, partition, wait, n)
        elif kind == "consumer":
            self.consumer(["rc", "ru", "g", "rc"][actor], consumer_action)
        elif kind == "advance":
            self.apply(Step("clock", "advance", {"ms": ms}))
        else:
            self.toggle_broker(1 + actor % 3)

    def producer(self, actor, sensible, action, partition, wait, n):
        """Half the time the next thing an application would do in the producer's state, else anything."""
        client = self.backend.producers[actor].client
        if client is None or not client.alive:
            action = "restart"
        elif actor == "P":
            action = "produce" if sensible or action in TXN_ONLY else action
        elif sensible:
            action = SENSIBLE.get(client.state, action)
            if isinstance(action, list):
                action = action[n % len(action)]
        if action == "produce":
            topic, part = ("audit", 0) if partition == 3 else ("orders", partition)
            args = {"topic": topic, "partition": part, "value": f"{actor}-{n}", "await": wait}
        elif action == "send_offsets_to_transaction":
            args = {"consumer": "g"}
        else:
            args = {}
        self.apply(Step(actor, action, args))

    def consumer(self, actor, action):
        client = self.backend.consumers[actor].client
        if client is None or not client.alive:
            action = "restart"
        if actor != "g" and action == "commit":
            action = "poll"
        self.apply(Step(actor, action))

    def toggle_broker(self, broker):
        up = self.backend.cluster.brokers[broker].up
        if up and sum(s.up for s in self.backend.cluster.brokers.values()) == 1:
            return  # keep one broker up: with none the test would only measure timeouts
        self.apply(Step("broker", "stop" if up else "start", {"broker": broker}))

    @invariant()
    def read_committed_never_sees_aborted_or_undecided_data(self):
        cluster = self.backend.cluster
        for name in ("rc", "g"):
            for tp, records in self.backend.consumers[name].received.items():
                log = cluster.log(tp)
                for offset, _value in records:
                    batch = log.batches[log.batch_index(offset)]
                    assert batch.control is None
                    if batch.transactional:
                        assert batch.txn is not None and batch.txn.outcome == COMMIT, (name, tp, offset)

    @invariant()
    def watermarks_are_ordered_and_the_lso_is_kafkas(self):
        for meta in self.backend.cluster.partitions.values():
            log = meta.log
            if log is None:
                continue
            assert log.log_start_offset <= log.last_stable_offset <= log.high_watermark <= log.log_end_offset
            unstable = [
                b.txn.first_offset
                for b in log.batches
                if b.txn is not None
                and b.control is None
                and (b.txn.last_offset is None or b.txn.last_offset >= log.high_watermark)
            ]
            expected = min([log.high_watermark, *unstable])
            assert log.last_stable_offset == expected, meta.name

    @invariant()
    def a_fenced_epoch_never_appends(self):
        assert self.fence_violations == []

    @invariant()
    def a_tv2_marker_carries_an_epoch_above_its_transactions_batches(self):
        # KIP-890 part 2: every EndTxn (and every coordinator abort) bumps the epoch before the markers are written
        if self.profile.transaction_version != 2:
            return
        for meta in self.backend.cluster.partitions.values():
            log = meta.log
            if log is None or log.topic.startswith("__"):
                continue
            data_epochs = {}
            for batch in log.batches:
                if batch.control is None and batch.txn is not None:
                    data_epochs[id(batch.txn)] = max(data_epochs.get(id(batch.txn), -1), batch.epoch)
                elif batch.control is not None and batch.txn is not None:
                    assert batch.epoch > data_epochs[id(batch.txn)], (meta.name, batch.base_offset)

    def teardown(self):
        # determinism: the same seed and commands give the same events
        first = [e.to_dict() for e in self.backend.events]
        again = new_backend(self.seed, self.profile)
        for step in self.steps:
            try:
                again.apply(step)
            except BackendError:
                pass
        assert [e.to_dict() for e in again.events] == first
        # the anomaly checker over the whole random history: a correct cluster never lets read_committed read an
        # aborted record (G1a) or one past the LSO of the moment (G1b)
        observation = self.backend.observe()
        logs = {tp: p["log"] for tp, p in observation["partitions"].items()}
        isolation = {n: a.isolation_level for n, a in ACTORS.items() if a.kind == CONSUMER}
        found = [
            f for f in check(History(self.history, logs, isolation)) if f.rule in ("aborted-read", "undecided-read")
        ]
        assert found == [], [str(f) for f in found]


def _test_case(profile, budget):
    machine = type(
        f"SimulatedCluster_{profile.kafka.replace('.', '')}_{profile.client}", (SimulatedCluster,), {"profile": profile}
    )
    case = machine.TestCase
    case.settings = settings(
        suppress_health_check=list(HealthCheck),
        derandomize=os.environ.get("HYPOTHESIS_PROFILE") != "thorough",
        **budget,
    )
    return case


TestSimulatedCluster = _test_case(DEFAULT_PROFILE, PROFILE)
TestSimulatedClusterKafka39Java = _test_case(Profile("3.9", "java"), OTHER_PROFILE)
TestSimulatedClusterKafka4Librdkafka = _test_case(Profile("4", "librdkafka"), OTHER_PROFILE)
TestSimulatedClusterKafka4Java = _test_case(Profile("4", "java"), OTHER_PROFILE)
