"""The differential test: every scenario in scenarios/ on the simulator and on a real Kafka cluster, under every
profile both can run (PROFILES: Kafka 3.5, 3.9 and 4.x, each with librdkafka and with its own Java client, and the
Java client of another release on 3.9 and 4.x), normalised
observations compared field by field. Kafka is the reference: where they differ, the simulator (or the scenario) is
wrong. There is no xfail: a difference is fixed, or, when it is one a real cluster cannot avoid (timing), it is
normalised below with the reason in the code, never for a field where the two could really disagree. A scenario a
profile cannot run meaningfully is listed in EXCLUDED with its reason (librdkafka on the scenario of a
kafka-clients race).

Each profile runs on the test cluster of its Kafka version (KAFKA_BOOTSTRAP_SERVERS, KAFKA4_BOOTSTRAP_SERVERS,
KAFKA35_BOOTSTRAP_SERVERS), and
the simulator runs the same profile. Run time: the scenarios of every profile run on their clusters POOL at a time
(each in its own topic and transactional-id prefix), the longest sleepers first; scenarios that stop brokers run
alone on their cluster afterwards (after every client's shared runs of that Kafka version), since they move
partition leaders under everyone. Scenarios that advance the clock really sleep (75 s for a transaction timeout);
one sleep is capped at 80 s here. Scenarios whose story needs a broker timer of days (TIME_COMPRESSED) run meanwhile
on a dedicated 1-node cluster of their Kafka version with that timer shortened, shared by that version's clients,
started and stopped by this module (about 10-30 s of start-up, overlapping the shared runs). The whole module, four
profiles, takes about 5-6.5 minutes on a 2-core machine (the Java client's workers start from a class-data sharing
archive, tools/java/build.sh).
"""

from __future__ import annotations

import concurrent.futures
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from playground.engine.spec import Profile
from playground.kafka.backend import KafkaBackend
from playground.scenario import load_library, run_scenario
from tests.kafka.conftest import broker_control_for, require_bootstrap

ROOT = Path(__file__).resolve().parents[2]
KAFKA_SH = ROOT / "tools" / "kafka" / "kafka.sh"
SCENARIOS = {s.id: s for s in load_library(ROOT / "scenarios")}

MAX_SLEEP_S = 80.0  # enough for every 75 s timeout scenario
POOL = 8  # scenario runs at a time, every profile together: most of a run is waiting (sleeps, timeouts, markers)
# The profiles compared: every client the real backend and the simulator both run, on each Kafka version, and the
# clients of another release that an upgrade meets (issue 20): kafka-clients 3.5 on Kafka 3.9 (the cluster first),
# kafka-clients 3.9 on Kafka 4 (the classic protocol on a TV2 cluster). Kafka 3.5's run on its own cluster, after
# the others (marker kafka35, tools/test.sh).
PROFILES = (
    Profile("3.9", "librdkafka"),
    Profile("4", "librdkafka"),
    Profile("3.9", "java"),
    Profile("4", "java"),
    Profile("3.9", "java", "3.5"),
    Profile("4", "java", "3.9"),
    Profile("3.5", "librdkafka"),
    Profile("3.5", "java"),
)

# Scenarios whose story needs a broker timer far longer than a test can wait: scenario id -> the broker properties
# of a dedicated 1-node cluster it runs on, the cap of one clock.advance there, and for each shortened timer the
# Kafka default it stands in for.
#
# Why this is a legitimate normalisation of time and not a change of behaviour: on the simulator `clock.advance`
# moves virtual time, so every broker timer due fires; on a real cluster it can only sleep, and a sleep of days is
# cut to `max_sleep_s`. Shortening the timer is the same experiment with a smaller time unit: the coordinator's code
# path, its checks and the records it writes are the same whatever the value of the setting. What decides the
# outcome is only the order of events, and that order is kept: on the simulator the advance is longer than the
# default timer plus its scan interval (checked by test_time_compression_keeps_the_order_of_events), and on the
# compressed cluster the capped sleep is longer than the shortened timer plus its scan interval, while the steps
# after the advance take far less than the shortened timer (so nothing expires that the simulator keeps). The
# observation is then compared in full, with no field left out.
TIME_COMPRESSED: dict[str, dict[str, Any]] = {
    "transactional-id-expiry": {
        # transactional.id.expiration.ms: 7 days -> 20 s; the removal scan: hourly -> every second. After the
        # 192 h advance (30 s here) both ids are gone; the idle producer's abort re-registers its id, and the 20 s
        # margin covers the remaining steps (a restarted worker, a commit, a poll) on a loaded machine.
        "broker_props": {
            "transactional.id.expiration.ms": 20_000,
            "transaction.remove.expired.transaction.cleanup.interval.ms": 1_000,
        },
        "kafka_defaults": {
            "transactional.id.expiration.ms": 7 * 24 * 3600 * 1000,
            "transaction.remove.expired.transaction.cleanup.interval.ms": 3600 * 1000,
        },
        "max_sleep_s": 30.0,
    },
}
# The dedicated clusters' run directories are temporary ones, and their two ports (broker, controller) are free ones
# the system hands out when the cluster starts: a fixed port clashed with another run's on the same machine.
# tools/test.sh runs this module a second time with `manage.py simcluster` standing in for the real clusters
# (KAFKA_STANDIN=simcluster): the dedicated time-compressed clusters are then simulated ones too.
STANDIN = os.environ.get("KAFKA_STANDIN", "")
COMPRESSED_START_TIMEOUT_S = 240.0
COMPRESSED_STOP_TIMEOUT_S = 150.0

# Reads that race the coordinator's markers: scenario id -> [(consumer, partition, reference consumer)].
#
# commit-visibility-per-partition: commit_transaction() returns once PrepareCommit is durable, before the COMMIT
# markers are written; each partition shows the transaction to read_committed readers when its own marker is
# replicated. The scenario makes that window 3 s on orders-1 with a simulator-only knob (a slow follower,
# sim.broker.2.replication.latency.ms), so the early reader sees t-0 and not yet t-1. A real cluster has no such
# knob: both markers land within milliseconds of commit_transaction() returning, and the real backend waits for
# the markers before every poll anyway (without that wait every scenario's polls would race the coordinator), so
# its early reader always gets t-1. Nothing in a healthy 3-node cluster with RF 3 can hold one partition's marker
# back deterministically: stopping orders-1's leader moves leadership to an in-sync follower at once, and the
# marker lands there (stopping two brokers drops every partition, __transaction_state's included, below min ISR).
# So only this: the early reader's orders-1 may hold nothing of the transaction or all of it, i.e. exactly what
# the late reader got there, never a part and never anything else. Everything else (the early reader's orders-0,
# the late reader, the logs, the watermarks, the coordinator's state) is compared as it is.
RACY_READS: dict[str, list[tuple[str, str, str]]] = {
    "commit-visibility-per-partition": [("early", "orders-1", "late")],
}


# Scenarios a profile cannot run meaningfully: (profile, scenario id) -> why. Each is left out of that profile's
# comparison on purpose: no test is made for it (in CI a skip is a failure), and test_every_scenario_is_compared
# checks that each has its reason. Every other pair is compared in full.
EXCLUDED: dict[tuple[Profile, str], str] = {
    # The scenario decides kafka-clients' race between AddOffsetsToTxn and AddPartitionsToTxn (its `first:`, held in
    # the Java worker, Worker.java's RaceQueue, so Java runs are compared in full). librdkafka has a race of its own
    # there that nothing in a step decides: its send_offsets_to_transaction right after a burst whose
    # AddPartitionsToTxn is fenced returned _FENCED in one run on Kafka 3.9.1 and _TIMED_OUT (then close() _FENCED)
    # in the next. The Java story is what this scenario tells; scenario 31 compares librdkafka on the fence.
    **{
        (Profile(kafka, "librdkafka"), "spring-shared-prefix-blocked"): "librdkafka's own race after a fenced "
        "AddPartitionsToTxn (_FENCED or _TIMED_OUT, both seen on Kafka 3.9.1), which no step decides"
        for kafka in ("3.9", "4", "3.5")
    },
    # kafka-clients 4.4 on Kafka 4 runs transaction protocol 2: no AddPartitionsToTxn, no AddOffsetsToTxn, so no race
    # of the scenario's to hold. What it throws depends on another order: its fenced Produce (InvalidProducerEpoch-
    # Exception, abortable, KIP-588) against its TxnOffsetCommit (ProducerFencedException). An application calling
    # sendOffsetsToTransaction within linger.ms (5 ms) of its sends gets the second, as the simulator does; a step
    # here is a round trip to the worker, longer than linger.ms, and the real run got the first (Kafka 4.4.0).
    (Profile("4", "java"), "spring-shared-prefix-blocked"): "transaction protocol 2 has no such race; the Produce "
    "goes before the TxnOffsetCommit on a real cluster because a step is a round trip longer than linger.ms",
}


def _has_broker_steps(scenario: Any) -> bool:
    return any(step.actor == "broker" for step in scenario.steps)


def _sleep_ms(scenario: Any) -> int:
    return sum(int(step.args.get("ms", 0)) for step in scenario.steps if step.actor == "clock")


def _run_on(scenario: Any, profile: Profile, **settings: Any) -> dict[str, Any]:
    """One scenario in `profile` on the real cluster named by `settings` (KafkaBackend's overrides). The runs outlive
    the test that starts them, so they never depend on a test's `settings` fixture nor on the environment."""
    backend = KafkaBackend(scenario.cluster, scenario.actors, seed=scenario.seed, settings=settings, profile=profile)
    return run_scenario(scenario, backend)


def _free_ports(n: int) -> list[int]:
    """`n` distinct ports nobody listens on now (bound together, so the system hands out different ones)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


class _CompressedCluster:
    """A dedicated 1-node cluster (tools/kafka/kafka.sh with a run directory and ports of its own) for one
    TIME_COMPRESSED scenario and one Kafka version, shared by that version's profiles (`users` of them: each run is
    in a topic and transactional-id prefix of its own, as on the shared clusters). The first `acquire()` starts it,
    the last `release()` stops it; `stop()` stops it whatever the count, and may be called any number of times."""

    def __init__(self, run_dir: Path, props: dict[str, Any], kafka: str, users: int = 1) -> None:
        self.run_dir = run_dir
        self.env = dict(
            os.environ,
            KAFKA_VERSION=kafka,
            KAFKA_RUN_DIR=str(run_dir),
            KAFKA_EXTRA_PROPS="\n".join(f"{k}={v}" for k, v in props.items()),
            KAFKA_READY_TIMEOUT=str(int(COMPRESSED_START_TIMEOUT_S) - 30),
        )
        self._lock = threading.Lock()
        self.started = False
        self.users = users
        self._bootstrap: str | None = None
        self._error: str | None = None
        self._simcluster: subprocess.Popen | None = None

    def acquire(self) -> str:
        with self._lock:
            if self._error:
                raise RuntimeError(self._error)
            if self._bootstrap is None and STANDIN == "simcluster":
                self.started = True
                self._bootstrap = self._start_simcluster()
            if self._bootstrap is None:
                self.started = True  # from here on, stop() must run even if start fails halfway
                broker_port, controller_port = _free_ports(2)
                self.env.update(KAFKA_BASE_PORT=str(broker_port), KAFKA_CONTROLLER_BASE_PORT=str(controller_port))
                out = subprocess.run(
                    ["bash", str(KAFKA_SH), "start", "--nodes", "1"],
                    cwd=ROOT,
                    env=self.env,
                    capture_output=True,
                    text=True,
                    timeout=COMPRESSED_START_TIMEOUT_S,
                )
                if out.returncode != 0 or not out.stdout.strip():
                    self._error = (
                        f"the time-compressed cluster did not start (logs in {self.run_dir}):\n{out.stderr[-2000:]}"
                    )
                    raise RuntimeError(self._error)
                self._bootstrap = out.stdout.strip().splitlines()[-1]
            return self._bootstrap

    def release(self) -> None:
        with self._lock:
            self.users -= 1
            last = self.users <= 0
        if last:
            self.stop()

    def _start_simcluster(self) -> str:
        """With simcluster standing in for the real clusters (tools/test.sh): a 1-node simulated cluster with the same
        broker properties, as `manage.py simcluster` serves it."""
        args = [sys.executable, "manage.py", "simcluster", "--kafka", self.env["KAFKA_VERSION"], "--nodes", "1"]
        args += ["--port", "0", *[f"--config={line}" for line in self.env["KAFKA_EXTRA_PROPS"].splitlines()]]
        self._simcluster = subprocess.Popen(
            args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self._simcluster.stdout is not None
        lines = [self._simcluster.stdout.readline().strip() for _ in range(2)]
        if not lines[-1]:
            self._error = "the time-compressed simcluster did not start"
            raise RuntimeError(self._error)
        return lines[-1]

    def stop(self) -> None:
        with self._lock:
            if not self.started:
                return
            if self._simcluster is not None:
                self._simcluster.terminate()
                self._simcluster.wait(timeout=30)
                self._simcluster = None
                self.started = False
                self._bootstrap = None
                return
            out = subprocess.run(
                ["bash", str(KAFKA_SH), "stop"],
                cwd=ROOT,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=COMPRESSED_STOP_TIMEOUT_S,
            )
            if out.returncode != 0:
                raise RuntimeError(f"could not stop the time-compressed cluster in {self.run_dir}: {out.stderr[-500:]}")
            self.started = False
            self._bootstrap = None


class _KafkaRuns:
    """Runs every scenario on a real cluster once per test session and profile, lazily, concurrently; each test
    waits for its own run only. Keys: (profile, scenario id)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[tuple[Profile, str], concurrent.futures.Future] = {}
        self._pools: list[concurrent.futures.ThreadPoolExecutor] = []
        self._clusters: list[_CompressedCluster] = []
        self.timings: dict[tuple[Profile, str], float] = {}
        self.started: dict[Profile, float] = {}

    def _timed(self, key: tuple[Profile, str], fn: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            return fn(*args, **kwargs)
        finally:
            self.timings[key] = time.monotonic() - t0

    def start(
        self,
        clusters: dict[str, tuple[str, str]],
        tmp_dir: Path,
        selected: set[tuple[Profile, str]] | None = None,
    ) -> None:
        """`clusters`: a profile's Kafka version -> (bootstrap servers, broker control) of its test cluster; the
        profiles of versions without one are not run (their tests fail, asking for the cluster). `selected`: the
        (profile, scenario id) pairs the session's tests compare (`-k`), so that a run of a few tests starts only
        theirs; None runs every pair."""
        with self._lock:
            if self._pools:
                return
            pool = concurrent.futures.ThreadPoolExecutor(POOL, thread_name_prefix="fidelity")
            self._pools = [pool]
            shared_runs: list[tuple[int, Profile, Any, dict[str, Any]]] = []
            solo_runs: list[tuple[Profile, Any, dict[str, Any]]] = []
            versions = [k for k in dict.fromkeys(p.kafka for p in PROFILES) if k in clusters]
            profiles = [p for p in PROFILES if p.kafka in clusters]

            def wanted(profile: Profile, sid: str) -> bool:
                return (profile, sid) not in EXCLUDED and (selected is None or (profile, sid) in selected)

            # one solo pool per Kafka version, shared by its clients: a scenario that stops brokers moves the
            # partition leaders under everything else on that cluster, so it runs alone there
            solo_pools = {
                k: concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=f"fidelity-solo-{k}") for k in versions
            }
            self._pools += list(solo_pools.values())
            # one time-compressed cluster per Kafka version and scenario, shared by that version's clients
            compressed_clusters: dict[tuple[str, str], _CompressedCluster] = {}
            for kafka in versions:
                for sid, spec in TIME_COMPRESSED.items():
                    cluster = _CompressedCluster(
                        tmp_dir / f"kafka-{kafka}-{sid}",
                        spec["broker_props"],
                        kafka,
                        users=sum(1 for p in profiles if p.kafka == kafka and wanted(p, sid)),
                    )
                    compressed_clusters[(kafka, sid)] = cluster
                    self._clusters.append(cluster)
            for profile in profiles:
                bootstrap, control = clusters[profile.kafka]
                self.started[profile] = time.monotonic()
                main = {"bootstrap": bootstrap, "max_sleep_s": MAX_SLEEP_S, "broker_control": control}
                compressed_pool = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix=f"fidelity-compressed-{profile.kafka}-{profile.client}"
                )
                self._pools.append(compressed_pool)

                # the dedicated clusters start first: their JVM start-up overlaps with the shared runs' sleeps
                for sid, spec in TIME_COMPRESSED.items():
                    if not wanted(profile, sid):
                        continue

                    def compressed(
                        scenario: Any = SCENARIOS[sid],
                        cluster: _CompressedCluster = compressed_clusters[(profile.kafka, sid)],
                        spec: dict[str, Any] = spec,
                        profile: Profile = profile,
                    ) -> dict[str, Any]:
                        try:
                            return _run_on(
                                scenario,
                                profile,
                                bootstrap=cluster.acquire(),
                                max_sleep_s=spec["max_sleep_s"],
                                broker_control="",
                            )
                        finally:
                            cluster.release()

                    key = (profile, sid)
                    self._futures[key] = compressed_pool.submit(self._timed, key, compressed)

                others = [s for s in SCENARIOS.values() if s.id not in TIME_COMPRESSED and wanted(profile, s.id)]
                shared_runs += [(_sleep_ms(s), profile, s, main) for s in others if not _has_broker_steps(s)]
                solo_runs += [(profile, s, main) for s in others if _has_broker_steps(s)]

            # the longest sleepers first, of every profile, so that their sleeps overlap with the quick ones;
            # submitted before the solo runs, whose barriers name these futures (a missing one would be skipped)
            shared_runs.sort(key=lambda run: run[0], reverse=True)
            for _ms, profile, s, main in shared_runs:
                key = (profile, s.id)
                self._futures[key] = pool.submit(self._timed, key, _run_on, s, profile, **main)
            for profile, s, main in solo_runs:
                # after every shared run of this Kafka version, of every client (its cluster's leaders move under
                # them); Future.result(), not concurrent.futures.wait(): a future cancelled by
                # shutdown(cancel_futures=True) never wakes wait()'s waiters, but it does wake result()
                barrier_keys = [(p, x.id) for _ms, p, x, _m in shared_runs if p.kafka == profile.kafka]

                def alone(
                    scenario: Any = s,
                    profile: Profile = profile,
                    main: dict[str, Any] = main,
                    barrier_keys: list[tuple[Profile, str]] = barrier_keys,
                ) -> dict[str, Any]:
                    for key in barrier_keys:
                        try:
                            self._futures[key].result()
                        except BaseException:
                            pass
                    return self._timed((profile, scenario.id), _run_on, scenario, profile, **main)

                self._futures[(profile, s.id)] = solo_pools[profile.kafka].submit(alone)

    def get(self, profile: Profile, scenario_id: str) -> dict[str, Any]:
        key = (profile, scenario_id)
        if key not in self._futures:
            require_bootstrap(profile.kafka)  # fails the test, naming the cluster it needs
        return self._futures[key].result(timeout=1800)

    def shutdown(self) -> None:
        try:
            for pool in self._pools:
                pool.shutdown(wait=True, cancel_futures=True)
        finally:
            # normally each run stops its own cluster; this covers an interrupted run (stop is idempotent)
            for cluster in self._clusters:
                cluster.stop()


_RUNS = _KafkaRuns()


def _test_clusters() -> dict[str, tuple[str, str]]:
    """Each profile's Kafka version -> its test cluster (bootstrap, broker control), where the environment names one."""
    from playground.kafka.clusters import SETTINGS

    out = {}
    for kafka in {p.kafka for p in PROFILES}:
        bootstrap = os.environ.get(SETTINGS[kafka][0], "").strip()
        if bootstrap:
            out[kafka] = (bootstrap, broker_control_for(bootstrap, kafka))
    return out


def _selected(items: list[Any]) -> set[tuple[Profile, str]]:
    """The (profile, scenario id) pairs of the collected comparison tests."""
    out = set()
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.originalname == "test_scenario_agrees_with_kafka" and "scenario_id" in params:
            out.add((params["profile"], params["scenario_id"]))
    return out


@pytest.fixture(scope="module")
def kafka_runs(request, tmp_path_factory):
    try:
        _RUNS.start(_test_clusters(), tmp_path_factory.mktemp("fidelity"), _selected(request.session.items))
        yield _RUNS
    finally:
        _RUNS.shutdown()
        if _RUNS.timings:
            for profile in _RUNS.started:
                took = {sid: t for (p, sid), t in _RUNS.timings.items() if p == profile}
                print(
                    f"\n[fidelity] {profile.label}: real-cluster run time per scenario: "
                    + ", ".join(f"{sid} {t:.0f}s" for sid, t in sorted(took.items(), key=lambda kv: -kv[1])),
                    flush=True,
                )


def _outcome(scenario: Any, index: int, outcome: str) -> str:
    step = scenario.steps[index]
    if step.action == "produce" and step.args.get("await") is False and outcome == "_FATAL":
        # Timing, legitimately: a fire-and-forget produce() only fails if the producer's fatal error (e.g. _FENCED
        # from an AddPartitionsToTxn answered PRODUCER_FENCED in the background) has already arrived. A real
        # application's burst of produce() calls takes microseconds and gets "ok" every time (so does the
        # simulator, where no time passes between them); each step here is a round trip to a worker process, and
        # on a busy machine the answer can come back between two steps. The records are lost either way (nothing
        # lands) and the commit reports _FENCED either way: those fields are compared as they are.
        return "ok"
    if step.action == "produce" and outcome in ("_FATAL", "_PURGE_QUEUE") and _follows_fire_and_forget(scenario, index):
        # Timing, legitimately, and the same race as above seen from an awaited produce() right after a burst of
        # fire-and-forget ones (librdkafka): the burst's AddPartitionsToTxn is refused (PRODUCER_FENCED, a fatal
        # error) in the background. If the refusal is back before this produce() is called, produce() raises
        # _FATAL at once; if not, the record is queued and the fatal error purges it while the call waits
        # (_PURGE_QUEUE). An application calling produce() microseconds after the burst gets the second (so does
        # the simulator, where no time passes between steps); a step here is a round trip to a worker process, so
        # the real run often gets the first. Either way nothing lands and the fatal error is the same: the logs,
        # the consumers and the next call's outcome are compared as they are.
        return "_FATAL or _PURGE_QUEUE (timing)"
    return outcome


def _follows_fire_and_forget(scenario: Any, index: int) -> bool:
    """The same actor's previous step is a fire-and-forget produce."""
    actor = scenario.steps[index].actor
    for step in reversed(scenario.steps[:index]):
        if step.actor == actor:
            return step.action == "produce" and step.args.get("await") is False
    return False


def _without_resent_markers(part: dict[str, Any]) -> dict[str, Any]:
    """Drop a marker that repeats the previous marker of the same producer id and epoch with no record of that
    producer in between, and renumber what follows.

    Timing, legitimately, and only where a scenario stops brokers: when a transaction coordinator's broker stops
    after PrepareCommit, the new coordinator resends the markers of every transaction it loads in PrepareCommit.
    If the old coordinator's markers had already landed (but not its CompleteCommit record), every partition gets
    a second, harmless COMMIT marker (at a higher coordinator epoch); if they had not, just one. On a real
    cluster which of the two happens depends on milliseconds between commit_transaction() returning and the
    broker going down (both were seen on the 3-node test cluster). Consumers see the same either way."""
    kept, removed, last = [], [], {}
    for e in part["log"]:
        key = e.get("producer")
        if "control" in e and last.get(key) == (e["control"], e["epoch"]):
            removed.append(e["offset"])
            continue
        last[key] = (e["control"], e["epoch"]) if "control" in e else None
        kept.append(dict(e, offset=e["offset"] - len(removed)))

    def shift(mark: int | None) -> int | None:
        return None if mark is None else mark - sum(1 for off in removed if off < mark)

    return {
        "log": kept,
        "high_watermark": shift(part["high_watermark"]),
        "last_stable_offset": shift(part["last_stable_offset"]),
    }


def normalise(obs: dict[str, Any], scenario: Any) -> dict[str, Any]:
    """What both backends must agree on. Dropped: `backend` (the name), `seed`, and `expect` (derived from the
    fields compared here). A consumer's partition with nothing received counts the same as a partition not
    listed. Otherwise nothing timing-dependent remains in an observation: the real backend waits for quiescence
    (markers written, LSO caught up, offsets stable) before every poll and before observing, so what a
    read_committed consumer sees right after commit_transaction() does not race the coordinator's markers, except
    where a scenario makes that race its subject (RACY_READS)."""
    partitions = {
        tp: {
            "log": part["log"],
            "high_watermark": part["high_watermark"],
            "last_stable_offset": part["last_stable_offset"],
        }
        for tp, part in obs["partitions"].items()
    }
    if _has_broker_steps(scenario):
        partitions = {tp: _without_resent_markers(part) for tp, part in partitions.items()}
    consumers = {name: dict(per) for name, per in obs["consumers"].items()}
    for consumer, tp, reference in RACY_READS.get(scenario.id, ()):
        got = consumers.get(consumer, {}).get(tp) or []
        whole = consumers.get(reference, {}).get(tp) or []
        if got == [] or got == whole:  # anything else stays as it is, and shows as a difference
            consumers.setdefault(consumer, {})[tp] = f"nothing yet, or all that {reference} got (timing)"
    return {
        "profile": obs["profile"],  # the cluster's finalized transaction.version: as reported vs as modelled
        "steps": [
            f"{s['index']} {s['step']} -> {_outcome(scenario, s['index'], s['outcome'])}"
            # a static member's poll: the generation it polled in (a rebalance would have moved it on)
            + (f" in generation {s['generation']}" if "generation" in s else "")
            for s in obs["steps"]
        ],
        "partitions": partitions,
        "consumers": {name: {tp: v for tp, v in per.items() if v} for name, per in consumers.items()},
        "transactions": obs["transactions"],
        "groups": obs["groups"],
    }


def differences(sim: dict[str, Any], real: dict[str, Any], path: str = "") -> list[str]:
    """Field paths where the two differ, with both values."""
    out: list[str] = []
    if isinstance(sim, dict) and isinstance(real, dict):
        for key in sorted(set(sim) | set(real), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in sim:
                out.append(f"{where}: sim has none, kafka {real[key]!r}")
            elif key not in real:
                out.append(f"{where}: sim {sim[key]!r}, kafka has none")
            else:
                out.extend(differences(sim[key], real[key], where))
    elif (
        isinstance(sim, list)
        and isinstance(real, list)
        and len(sim) == len(real)
        and (path.endswith("log") or path == "steps")
    ):
        for i, (a, b) in enumerate(zip(sim, real)):
            out.extend(differences(a, b, f"{path}[{i}]"))
    elif sim != real:
        out.append(f"{path}: sim {sim!r}, kafka {real!r}")
    return out


def _params() -> list[Any]:
    return [
        pytest.param(
            profile,
            sid,
            marks=[pytest.mark.kafka] + ([pytest.mark.kafka35] if profile.kafka == "3.5" else []),
            id=f"kafka{profile.kafka}-{profile.client_key}-{sid}",
        )
        for profile in PROFILES
        for sid in SCENARIOS
        if (profile, sid) not in EXCLUDED  # no test at all, not a skip: in CI a skip is a failure
    ]


@pytest.mark.parametrize(("profile", "scenario_id"), _params())
def test_scenario_agrees_with_kafka(profile, scenario_id, kafka_runs):
    scenario = SCENARIOS[scenario_id]
    real = kafka_runs.get(profile, scenario_id)
    sim = run_scenario(scenario, "sim", profile=profile)
    diffs = differences(normalise(sim, scenario), normalise(real, scenario))
    where = f"{scenario_id} ({profile.label})"
    if diffs:
        print(f"\n[fidelity] {where}:\n  " + "\n  ".join(diffs), flush=True)
    assert not diffs, f"{where}: the simulator differs from Kafka in {len(diffs)} field(s):\n" + "\n".join(diffs)


@pytest.mark.kafka
def test_every_scenario_is_compared():
    assert len(SCENARIOS) >= 1
    assert set(TIME_COMPRESSED) <= set(SCENARIOS), "TIME_COMPRESSED names a scenario that no longer exists"
    assert set(RACY_READS) <= set(SCENARIOS), "RACY_READS names a scenario that no longer exists"
    for (profile, sid), why in EXCLUDED.items():
        assert profile in PROFILES and sid in SCENARIOS and why.strip(), (
            f"EXCLUDED[{profile}, {sid!r}] is stale or unexplained"
        )
    for sid, reads in RACY_READS.items():
        names = {a for a, spec in SCENARIOS[sid].actors.items() if spec.kind == "consumer"}
        for consumer, _tp, reference in reads:
            assert {consumer, reference} <= names, f"RACY_READS[{sid!r}] names a consumer the scenario lacks"


def test_time_compression_keeps_the_order_of_events():
    """TIME_COMPRESSED is only a change of time unit if the order of events is kept: on the simulator the
    scenario's clock.advance outlasts the Kafka default of every shortened timer (plus the scans that act on it),
    and on the compressed cluster the capped sleep outlasts the shortened values."""
    for sid, spec in TIME_COMPRESSED.items():
        longest_ms = max(int(step.args.get("ms", 0)) for step in SCENARIOS[sid].steps if step.actor == "clock")
        assert longest_ms >= sum(spec["kafka_defaults"].values()), f"{sid}: the simulator's timers would not fire"
        assert set(spec["kafka_defaults"]) == set(spec["broker_props"])
        assert spec["max_sleep_s"] * 1000 >= 1.25 * sum(spec["broker_props"].values()), (
            f"{sid}: the compressed cluster's timers would not fire within the capped sleep"
        )
        assert not SCENARIOS[sid].cluster.config.keys() & spec["broker_props"].keys(), (
            f"{sid}: the scenario sets a compressed property itself"
        )
