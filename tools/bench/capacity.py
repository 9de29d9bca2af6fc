"""What one server process holds and spends, for sizing a deployment (docs/deploy.md).

    .venv/bin/python tools/bench/capacity.py [--sessions 100] [--json]

In this process (Django set up on a throw-away SQLite file; no Daphne, no channel layer: what a session costs, not
how it is carried), it measures:
- the memory one live session holds: `--sessions` sessions of a workshop scenario (the incident in full: Kafka and its
  database), each stepped to its end, held by the cache as a server process holds them; the resident set's growth
  divided by their number, and the same for free-play sessions after 50 commands;
- the CPU of a command: a step applied and stored (session.apply_step), p50 over a session's steps, without the
  render and fan-out of the panels (tools/bench/sharing.py and workshop.py measure those through Daphne);
- the CPU of an external client's request through a session's protocol core (external.receive, as a listener feeds
  it): Metadata of the session's topics, an idle Fetch, a one-record Produce, ApiVersions; p50 per request;
- opening a session in a process that does not hold it (the cache emptied): one of `--requests` client requests with
  its checkpoints stored with the log, and the same with them deleted (a replay from the start).
Prints a table, or JSON with --json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)


def setup(db_path: str) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "playground.settings"
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def cpu_ms(fn) -> float:
    started = time.thread_time()
    fn()
    return (time.thread_time() - started) * 1000


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def session_memory(count: int) -> dict:
    from playground import session
    from playground.engine.spec import Step
    from playground.scenario import library

    entry = library.find("db-incident-in-full")
    gc.collect()
    before = rss_mib()
    command_ms: list[float] = []
    for _ in range(count):
        row = session.create(entry.scenario, source=entry.scenario.source, backend="sim")
        while True:
            live = session.load(row.id)
            if live.cursor >= len(live.steps):
                break
            command_ms.append(cpu_ms(lambda sid=row.id: session.step(sid)))
    gc.collect()
    scenario_mib = (rss_mib() - before) / count
    before = rss_mib()
    for _ in range(count):
        row = session.create(None, backend="sim")
        _live, name = session.add_producer(row.id, "new")
        for i in range(50):
            step = (
                Step(name, "init_transactions") if i == 0 else Step(name, "produce", {"topic": "orders", "value": "v"})
            )
            session.apply_step(row.id, step)
    gc.collect()
    free_mib = (rss_mib() - before) / count
    return {
        "sessions": count,
        "scenario_session_mib": round(scenario_mib, 2),
        "free_play_session_mib": round(free_mib, 2),
        "command_cpu_ms_p50": p50(command_ms),
    }


def external_requests(n: int) -> dict:
    from playground import session
    from playground.protocol import messages, records
    from playground.session import external
    from playground.session.commands import Change, commit
    from playground.session.live import run_entry

    sid = session.create(None, backend="sim").id
    listen = {external.LISTEN: {"brokers": {"1": ["127.0.0.1", 1]}, "owner": external.OWNER, "wall_ms": 0}}
    commit(sid, lambda live: Change(append=[run_entry(live, listen)]))

    def frame(api: int, version: int, body: dict, correlation: int) -> bytes:
        cls = messages.request_class(api, version)
        return messages.encode_request(api, version, correlation, "capacity", messages.build(cls, body))

    meta = {
        "topics": [{"name": "orders", "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }
    fetch = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 1,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": "orders",
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": 10**9,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }

    def produce_body(i: int) -> dict:
        data = records.encode_batch([records.Record(0, 0, None, f"v{i}".encode())])
        return {
            "transactional_id": None,
            "acks": 1,
            "timeout": 30000,
            "topic_data": [{"name": "orders", "partition_data": [{"index": 0, "records": data}]}],
        }

    live = session.load(sid)
    core = external.core_of(live.backend)
    leader = core.cluster.leader_of("orders-0")
    kinds = {
        "ApiVersions": lambda i: frame(18, 3, {"client_software_name": "b", "client_software_version": "1"}, i),
        "Metadata": lambda i: frame(3, 12, meta, i),
        "Fetch (nothing new)": lambda i: frame(1, 11, fetch, i),
        "Produce (1 record)": lambda i: frame(0, 9, produce_body(i), i),
    }
    out = {}
    correlation = 0
    for name, make in kinds.items():
        costs = []
        for _ in range(n):
            correlation += 1
            payload = make(correlation)
            with session.CACHE.lock(sid):
                costs.append(cpu_ms(lambda p=payload: external.receive(live, 1, leader, p)))
                core.take_output()
        out[name] = p50(costs)
    return out


def opening(requests: int) -> dict:
    from playground import session
    from playground.models import Checkpoint
    from playground.protocol import messages
    from playground.session import checkpoints, external
    from playground.session.commands import Change, commit
    from playground.session.live import run_entry

    sid = session.create(None, backend="sim").id
    listen = {external.LISTEN: {"brokers": {"1": ["127.0.0.1", 1]}, "owner": external.OWNER, "wall_ms": 0}}
    commit(sid, lambda live: Change(append=[run_entry(live, listen)]))
    cls = messages.request_class(1, 11)
    body = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    fed = 0
    while fed < requests:
        with session.CACHE.lock(sid):
            live = session.CACHE.peek(sid)
            started = time.perf_counter()
            for _ in range(min(500, requests - fed)):
                fed += 1
                payload = messages.encode_request(1, 11, fed, "poller", messages.build(cls, body))
                external.receive(live, 1, 1, payload)
            checkpoints.charge(live, (time.perf_counter() - started) * 1000)
        commit(sid, lambda live: Change())
    rows = session.load(sid).length

    def open_once() -> float:
        session.CACHE.clear()
        gc.collect()
        started = time.perf_counter()
        session.load(sid)
        return (time.perf_counter() - started) * 1000

    with_checkpoints = open_once()
    stored = Checkpoint.objects.filter(session_id=sid).count()
    Checkpoint.objects.filter(session_id=sid).delete()
    from_start = open_once()
    return {
        "requests": requests,
        "rows": rows,
        "stored_checkpoints": stored,
        "open_ms_from_stored_checkpoint": round(with_checkpoints, 1),
        "open_ms_replaying_everything": round(from_start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        setup(str(Path(tmp) / "capacity.sqlite3"))
        from django.conf import settings

        settings.PLAYGROUND_LIVE_SESSIONS = 10 * args.sessions  # hold them all: their memory is what is measured
        results = {
            "memory": session_memory(args.sessions),
            "external_request_cpu_ms_p50": external_requests(300),
            "opening": opening(args.requests),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    m = results["memory"]
    print(
        f"a live session holds: {m['scenario_session_mib']} MiB (the incident in full, at its end), "
        f"{m['free_play_session_mib']} MiB (free play after 50 commands); {m['sessions']} of each"
    )
    print(f"a command's CPU (applied and stored, no render): p50 {m['command_cpu_ms_p50']} ms")
    for name, value in results["external_request_cpu_ms_p50"].items():
        print(f"an external client's {name}: p50 {value} ms of CPU")
    o = results["opening"]
    print(
        f"a session of {o['requests']:,} client requests ({o['rows']} rows, {o['stored_checkpoints']} stored "
        f"checkpoints) opens in {o['open_ms_from_stored_checkpoint']} ms from its stored checkpoint, "
        f"{o['open_ms_replaying_everything']} ms replaying everything"
    )
    print(f"this process's peak resident set: {results['peak_rss_mib']} MiB")


if __name__ == "__main__":
    main()
