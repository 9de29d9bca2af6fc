"""The session of millions of requests (issue 30, "A door that holds"): a client pipelines requests to a session's
listener as fast as it goes, and every one of them is in the session's log; how long does that session then take to
open in a process that did not hold it, and how much memory?

    .venv/bin/python tools/bench/door.py [--requests 1000000] [--limits NAME=N,...] [--log-json] [--check] [--json]

Starts one Daphne in production mode with PLAYGROUND_LISTEN=1 over a throw-away SQLite file (loopback, free ports,
no Redis), starts a free-play session (POST /new/), makes it listen (POST /s/<id>/listen/, the creator's drive
capability) and points a raw client (tools/bench/rawkafka.py) at the leader of orders-0: `--requests` Fetch v12
requests (fetch.wait.max.ms 0, offset 0 of the empty partition: each is answered at once), pipelined on one
connection, the answers read as they come. The session's limits are the defaults (`--limits` passes
PLAYGROUND_LIMITS: `kafka_request_cpu_percent=0` lifts the request quota that otherwise holds the client at 10% of a
core, `kafka_log_bytes` and `commands` what the log may hold). Then POST /s/<id>/unlisten/ (the log holds every
request the listener handled), the Daphne is killed with SIGKILL, and the session is opened

- in a fresh Python process (Django set up, nothing of the session in it): `playground.session.load(id)` timed, then
  `playground.session.moment(id, k)` at the middle step; the process's peak memory (VmHWM) before and after;
- in a fresh Daphne over the same database: GET /s/<id>/ (time to the first byte of the answer, and to its last),
  GET /s/<id>/?at=<middle>, and the websocket's first frame (the snapshot); its VmHWM before and after; with
  `--log-json`, GET /s/<id>/log.json after them (it spells out every request).

Only HTTP, the Kafka protocol and the package's public `load`/`moment` are used, so the bench measures any way the
session is stored. Aim (issue 30): opens in under 2 s, in under 500 MiB.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "bench"))

import rawkafka  # noqa: E402
from opening import open_over_http, timed_get, vm_kib  # noqa: E402

from playground.deploy import procs  # noqa: E402
from tests.web.http import Browserish  # noqa: E402

QUICK = "kafka_request_cpu_percent=0"  # the request quota lifted: a million requests in minutes, not a quarter hour
AIM_OPEN_S = 2.0
AIM_PEAK_MIB = 500.0

OPEN_IN_A_FRESH_PROCESS = textwrap.dedent(
    """
    import json, os, sys, time
    import django
    django.setup()
    from playground import session

    def hwm_kib():
        for line in open(f"/proc/{os.getpid()}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])

    sid = sys.argv[1]
    out = {"hwm_before_mib": round(hwm_kib() / 1024, 1)}
    t0 = time.perf_counter()
    live = session.load(sid)
    out["load_s"] = round(time.perf_counter() - t0, 3)
    out["steps"] = live.step_count
    out["hwm_after_load_mib"] = round(hwm_kib() / 1024, 1)
    middle = live.step_count // 2
    t0 = time.perf_counter()
    session.moment(sid, middle)
    out["moment_s"] = round(time.perf_counter() - t0, 3)
    out["middle"] = middle
    out["hwm_after_moment_mib"] = round(hwm_kib() / 1024, 1)
    print(json.dumps(out))
    """
)


def env_for(work: Path, port: int, limits: str) -> dict[str, str]:
    return procs.django_env(
        work / "door.sqlite3",
        "",
        DJANGO_DEBUG="0",
        PLAYGROUND_PUBLIC_URL=f"http://127.0.0.1:{port}",
        PLAYGROUND_VAR_DIR=str(work / "var"),
        PLAYGROUND_LISTEN="1",
        PLAYGROUND_LIMITS=limits,
    )


def prepare(env: dict[str, str]) -> None:
    procs.migrate(env)
    subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v", "0"],
        env=env,
        check=True,
        cwd=ROOT,
    )


def listening_session(base: str) -> tuple[Browserish, str, str]:
    """(the creator, the session's id, the bootstrap servers its listener answers)."""
    c = Browserish(base)
    sid = c.new_session("")
    status, body, _h = c.post(f"/s/{sid}/listen/")
    if status != 200:
        raise RuntimeError(f"POST /s/{sid}/listen/ -> {status}: {body[:300]}")
    answer = json.loads(body)
    if answer.get("state") != "listening":
        raise RuntimeError(f"POST /s/{sid}/listen/ answered {answer}")
    return c, sid, answer["bootstrap_servers"]


def flood(bootstrap: str, requests: int, timeout_s: float) -> dict:
    """`requests` Fetch requests pipelined to orders-0's leader; what was answered."""
    where = rawkafka.layout(bootstrap, "orders")
    host, port = where.leader_of(0)
    frame = rawkafka.fetch_frame("door-bench", "orders", [(0, 0)])
    pipe = rawkafka.Pipeline(
        host, port, frame, count=requests, stop_at=time.monotonic() + timeout_s, sample_every=10_000
    )
    return pipe.run().summary()


def open_in_fresh_process(env: dict[str, str], sid: str) -> dict:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", OPEN_IN_A_FRESH_PROCESS, sid],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0:
        return {"error": done.stderr.strip()[-2000:]}
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_s"] = round(time.perf_counter() - started, 2)
    return out


def run(args) -> dict:
    work = Path(tempfile.mkdtemp(prefix="door-"))
    daphnes: list[procs.Proc] = []
    try:
        port = procs.free_port()
        env = env_for(work, port, args.limits)
        prepare(env)
        first = procs.start_daphne(env, work / "daphne", port=port)
        daphnes.append(first)
        creator, sid, bootstrap = listening_session(first.url)
        sent = flood(bootstrap, args.requests, args.timeout)
        serving = vm_kib(first.proc.pid)
        status, body, _h = creator.post(f"/s/{sid}/unlisten/")
        if status not in (200, 204):
            raise RuntimeError(f"POST /s/{sid}/unlisten/ -> {status}: {body[:300]}")
        first.kill()  # SIGKILL: nothing more is written at its exit
        fresh = open_in_fresh_process(env, sid)
        second = procs.start_daphne(env, work / "daphne")
        daphnes.append(second)
        middle = fresh.get("middle")
        http = open_over_http(second, sid, middle)
        log_json = None
        if args.log_json:
            log_json = timed_get(second.url, f"/s/{sid}/log.json")
            log_json.pop("body", None)
            log_json["hwm_after_mib"] = round(vm_kib(second.proc.pid).get("VmHWM", 0) / 1024, 1)
        size = work / "door.sqlite3"
        return {
            "requests": args.requests,
            "limits": args.limits,
            "flood": sent,
            "serving_daphne": {
                "rss_mib": round(serving.get("VmRSS", 0) / 1024, 1),
                "peak_mib": round(serving.get("VmHWM", 0) / 1024, 1),
            },
            "database_mib": round(size.stat().st_size / 2**20, 1) if size.exists() else None,
            "fresh_process": fresh,
            "fresh_daphne": http,
            "log_json": log_json,
            "aims": aims(fresh, http),
        }
    finally:
        for d in daphnes:
            d.stop()
        if args.keep:
            print(f"(the files: {work})", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


def aims(fresh: dict, http: dict) -> dict:
    opens = [fresh.get("load_s"), fresh.get("moment_s")] + [http[k].get("total_s") for k in ("page", "middle", "ws")]
    peaks = [fresh.get("hwm_after_moment_mib"), http.get("hwm_after_mib")]
    return {
        "opens_under_2_s": all(x is not None and x < AIM_OPEN_S for x in opens),
        "peak_under_500_mib": all(x is not None and x < AIM_PEAK_MIB for x in peaks),
    }


def report(r: dict) -> None:
    f = r["flood"]
    print(f"{r['requests']:,} Fetch requests pipelined to one session's listener (PLAYGROUND_LIMITS={r['limits']!r})")
    print(
        f"  answered {f['answered']:,} of {f['sent']:,} sent in {f['seconds']} s ({f['answered_per_s']:,}/s); "
        f"{f['bytes_sent']:,} bytes sent, {f['bytes_answered']:,} answered; throttled answers {f['throttled_answers']} "
        f"(max {f['throttle_ms_max']} ms); errors {f['errors'] or 'none'}; closed by the server: {f['closed_by_server']}"
    )
    s = r["serving_daphne"]
    print(
        f"  the Daphne that served it: RSS {s['rss_mib']} MiB, peak {s['peak_mib']} MiB; database {r['database_mib']} MiB"
    )
    p = r["fresh_process"]
    if "error" in p:
        print(f"  fresh process: failed: {p['error']}")
    else:
        print(
            f"  fresh process: session.load {p['load_s']} s ({p['steps']:,} steps), session.moment at step "
            f"{p['middle']:,} {p['moment_s']} s; VmHWM {p['hwm_before_mib']} MiB after setup, "
            f"{p['hwm_after_load_mib']} after load, {p['hwm_after_moment_mib']} after the moment (process {p['process_s']} s)"
        )
    h = r["fresh_daphne"]
    for key, what in (("page", "GET /s/<id>/"), ("middle", "GET ?at=<middle>"), ("ws", "websocket snapshot")):
        x = h[key]
        print(
            f"  fresh Daphne, {what:19}: status {x.get('status')}, first byte {x.get('first_byte_s')} s, "
            f"total {x.get('total_s')} s, {x.get('bytes', 0):,} bytes"
        )
    print(f"  fresh Daphne VmHWM: {h['hwm_before_mib']} MiB before, {h['hwm_after_mib']} MiB after")
    if r["log_json"] is not None:
        j = r["log_json"]
        print(
            f"  then GET /s/<id>/log.json: status {j.get('status')}, {j.get('bytes', 0):,} bytes in {j.get('total_s')} s; "
            f"VmHWM after it {j['hwm_after_mib']} MiB"
        )
    print(f"  aims (open < {AIM_OPEN_S} s, peak < {AIM_PEAK_MIB:.0f} MiB): {r['aims']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1_000_000, help="Fetch requests to pipeline (default 1,000,000)")
    ap.add_argument(
        "--limits",
        default=QUICK,
        help=f"PLAYGROUND_LIMITS for the server (default {QUICK!r}: the request quota lifted; '' for the defaults)",
    )
    ap.add_argument(
        "--timeout", type=float, default=3600.0, help="seconds the client may take to send them (default 3600)"
    )
    ap.add_argument(
        "--log-json",
        action="store_true",
        help="then GET /s/<id>/log.json in the fresh Daphne (every request spelled out: large, and slow)",
    )
    ap.add_argument(
        "--check", action="store_true", help="exit 1 when an aim is missed (make bench prints, never fails)"
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the server's files (printed at the end)")
    args = ap.parse_args(argv)
    if args.requests < 1:
        ap.error("--requests: at least 1")
    result = run(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 1 if args.check and not all(result["aims"].values()) else 0


if __name__ == "__main__":
    raise SystemExit(main())
