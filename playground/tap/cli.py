"""`manage.py tap --upstream BOOTSTRAP [--listen HOST:PORT] [--report FILE]`: the tap in front of a real cluster.

It learns the upstream brokers from a Metadata answer, listens for each (PORT, PORT+1, ... in the order of their
ids; port 0: free ports), prints its own bootstrap list as its last line, like `simcluster`, and serves until SIGTERM
(or SIGINT). With `--report FILE` it writes the report (JSON: connections, transactional ids and their instances,
findings) then, whenever it gets SIGUSR1, and every `--report-interval-s` (2 s; the live page at /inspect/tap/ reads
the file the server's PLAYGROUND_TAP_REPORT names).

With `--publish [NAME]` (manage.py only: it needs the database) the report is also stored in the database as NAME
(the upstream's bootstrap list when not given) as often, where the live page reads it on whichever host serves it.

With `--record-session [TITLE]` (manage.py only: it needs the database) the requests the clients send are also
recorded as a new simulator session's external clients' rows (playground/session/taprecord.py); the tap prints
`recording: <session path>#drive=<capability>` before its bootstrap list, and the report says where it is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from playground.protocol.framing import MAX_REQUEST_BYTES


class UsageError(ValueError):
    pass


def add_arguments(p: Any) -> None:
    p.add_argument("--upstream", required=True, help="the real cluster's bootstrap servers (HOST:PORT,...)")
    p.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT of the first listener (port 0: free ports)")
    p.add_argument("--report", default=None, help="where to write the JSON report on SIGTERM and SIGUSR1")
    p.add_argument(
        "--report-interval-s",
        type=float,
        default=2.0,
        help="with --report, write it this often too (the live page beside /inspect/ reads it); 0: on signals only",
    )
    p.add_argument("--max-events", type=int, default=200, help="events kept per connection (the last ones)")
    p.add_argument(
        "--socket-request-max-bytes",
        type=int,
        default=MAX_REQUEST_BYTES,
        help="socket.request.max.bytes: a larger request frame closes the connection, as the broker's would",
    )
    p.add_argument(
        "--publish",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="store the report in the database too, as NAME (default: the upstream), for the live page on any host",
    )
    p.add_argument(
        "--record-session",
        nargs="?",
        const="",
        default=None,
        metavar="TITLE",
        help="record the clients' requests as a new simulator session (its path is printed before the bootstrap list)",
    )
    p.add_argument(
        "--record-kafka",
        default="3.9",
        choices=("3.5", "3.9", "4"),
        help="the Kafka release the recorded session runs on (it can be compared with the others)",
    )


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--listen {value!r}: expected HOST:PORT")
    return host, int(port)


def write_report(path: str, report: dict[str, Any]) -> None:
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps(report, indent=1, default=str))
    os.replace(partial, target)  # a reader never sees half a report


def run(
    options: dict[str, Any],
    out: Any = None,
    recording: Callable[..., Any] | None = None,
    publish: Callable[[str, dict[str, Any]], None] | None = None,
) -> None:
    """Serve until SIGTERM. `recording`: what records a session (session/taprecord.py's TapRecording); `publish(name,
    report)`: what stores a report (TapReport.publish). The management command hands them in: this layer does not
    reach the database."""
    host, port = parse_listen(options["listen"])
    if not options["upstream"].strip():
        raise UsageError("--upstream: expected the cluster's bootstrap servers")
    if options.get("record_session") is not None and recording is None:
        raise UsageError("--record-session: run the tap as `manage.py tap` (the session is stored in its database)")
    if options.get("publish") is not None and publish is None:
        raise UsageError("--publish: run the tap as `manage.py tap` (the report is stored in its database)")
    if options.get("publish") is not None and len(options["publish"]) > 200:
        raise UsageError("--publish NAME: at most 200 characters")
    asyncio.run(_serve(options, host, port, out or sys.stdout, recording, publish))


async def _serve(
    options: dict[str, Any],
    host: str,
    port: int,
    out: Any,
    recording: Callable[..., Any] | None = None,
    publish: Callable[[str, dict[str, Any]], None] | None = None,
) -> None:
    from playground.tap.observer import Observer
    from playground.tap.proxy import Tap

    tap = Tap(
        options["upstream"],
        host=host,
        base_port=port,
        observer=Observer(max_events=options["max_events"]),
        max_request_bytes=options["socket_request_max_bytes"],
    )
    bootstrap = await tap.start()
    recorder = None
    if options.get("record_session") is not None and recording is not None:
        first = min(tap.ports)
        recorder = recording(
            upstream=options["upstream"],
            listener=(host, tap.ports[first]),
            topics=await tap.topics(),
            title=options["record_session"],
            kafka=options.get("record_kafka") or "3.9",
        )
        await asyncio.to_thread(recorder.start)
        tap.recorder = recorder
        out.write(f"recording: {recorder.report()['path']}#drive={recorder.drive_secret}\n")

    def report() -> dict[str, Any]:
        return {**tap.report(), **({"recording": recorder.report()} if recorder is not None else {})}

    out.write(f"{bootstrap}\n")
    out.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    report_path = options.get("report")
    name = options.get("publish")
    if name is not None and publish is not None:
        name = name or options["upstream"].strip()[:200]

    async def write() -> None:
        """The report where it was asked for: the file, the database (a blocking call: not on the tap's loop)."""
        now = report()
        if report_path:
            write_report(report_path, now)
        if name is not None and publish is not None:
            await asyncio.to_thread(publish, name, now)

    if report_path:
        loop.add_signal_handler(signal.SIGUSR1, lambda: write_report(report_path, report()))
    interval_s = float(options.get("report_interval_s") or 0)
    ticker = asyncio.create_task(_every(interval_s, write, stop)) if (
        (report_path or name is not None) and interval_s > 0) else None  # fmt: skip
    await stop.wait()
    if ticker is not None:
        await ticker
    await tap.close()
    if recorder is not None:
        await asyncio.to_thread(recorder.stop)
    await _written(write)


async def _written(write: Callable[[], Awaitable[None]]) -> None:
    try:
        await write()
    except Exception as e:  # a full disk, a database away: the tap serves on (or stops) all the same, and says so
        logging.getLogger("playground.tap").warning("the report could not be written: %s", e)


async def _every(interval_s: float, write: Callable[[], Awaitable[None]], stop: asyncio.Event) -> None:
    """Write the report every `interval_s` until stopped (the live page reads it: a tap that stopped writing shows
    there as a report growing old)."""
    while not stop.is_set():
        await _written(write)
        try:
            await asyncio.wait_for(stop.wait(), interval_s)
        except TimeoutError:
            pass


def main(argv: list[str] | None = None) -> int:
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]  # as simcluster: kio's strategies cost start-up
    logging.basicConfig(level=logging.WARNING, format="tap: %(message)s")
    p = argparse.ArgumentParser(prog="manage.py tap", description="A Kafka-protocol tap in front of a real cluster.")
    add_arguments(p)
    try:
        run(vars(p.parse_args(argv)))
    except UsageError as e:
        print(f"tap: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"tap: {e}", file=sys.stderr)
        return 1
    return 0
