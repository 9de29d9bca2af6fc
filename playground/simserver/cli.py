"""`simcluster`'s command line, without Django: `manage.py simcluster` and `python -m playground.simserver` both run
`main()`. The simulated cluster as a Kafka server, one listener per broker (P, P+1, ...; `--port 0`: free ports).

Once every listener accepts connections it prints `KAFKA_BROKER_CONTROL=<template>` (stops or starts one simulated
broker of this process, for the real backend's broker steps), then the bootstrap list as its last line, and serves
until SIGTERM (or SIGINT).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import shlex
import signal
import sys
from typing import Any

from playground.engine.spec import KAFKA_RELEASES


def parser(prog: str = "simcluster") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"manage.py {prog}", description="Serve the simulated cluster over the Kafka protocol."
    )
    add_arguments(p)
    return p


def add_arguments(p: Any) -> None:
    p.add_argument("--kafka", choices=tuple(KAFKA_RELEASES), default="3.9", help="the Kafka release modelled")
    p.add_argument("--nodes", type=int, default=3, help="brokers (1-9)")
    p.add_argument("--port", type=int, default=9092, help="broker 1's port, then +1 per broker; 0: free ports")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on and advertise")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting (transaction.abort.timed.out.transaction.cleanup.interval.ms, "
        "transactional.id.expiration.ms, auto.create.topics.enable, num.partitions, message.max.bytes, "
        "socket.request.max.bytes, log.retention.bytes, log.segment.bytes, connections.max.idle.ms, "
        "producer_byte_rate, consumer_byte_rate (the default user's quotas), sim.policy.*, sim.retained.max.bytes, "
        "sim.* knobs, ...)",
    )
    p.add_argument("--verbose", action="store_true", help="log every request (broker, api, version) to stderr")


class UsageError(ValueError):
    pass


def parse_config(items: list[str]) -> dict[str, str]:
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config {item!r}: expected KEY=VALUE")
        config[key.strip()] = value.strip()
    return config


# The simulator's latencies (playground/sim/cluster.py) model a cluster's network for its own client models. Here the
# clients' network is real: between the simulated brokers, replication and requests (markers) take no time unless
# --config says otherwise, and transactions complete as fast as on a broker on loopback.
SERVED_LATENCIES = {"sim.replication.latency.ms": "0", "sim.interbroker.latency.ms": "0"}


def run(options: dict[str, Any], out: Any = None) -> None:
    """Serve until SIGTERM/SIGINT. `out`: where the two lines go (stdout)."""
    if not 1 <= options["nodes"] <= 9:
        raise UsageError("--nodes must be between 1 and 9")
    config = {**SERVED_LATENCIES, **parse_config(options["config"])}
    from playground.simserver.bounds import Bounds

    try:
        Bounds.from_config(config)
    except ValueError as e:
        raise UsageError(f"--config: a size, rate or count must be a number ({e})") from None
    asyncio.run(_serve(options, config, out or sys.stdout))


async def _serve(options: dict[str, Any], config: dict[str, str], out: Any) -> None:
    from playground.sim.cluster import Cluster
    from playground.simserver import control
    from playground.simserver.server import SimServer

    cluster = Cluster(
        brokers=options["nodes"], config=config, seed=options["seed"], keep_events=False, kafka=options["kafka"]
    )
    on_request = None
    if options["verbose"]:

        def on_request(broker: int, api_key: int, name: str, version: int, _client: str | None) -> None:
            print(f"b{broker} {name}({api_key}) v{version}", file=sys.stderr, flush=True)

    server = SimServer(
        cluster,
        host=options["host"],
        base_port=options["port"],
        seed=options["seed"],
        config=config,
        record_values=False,  # nothing here reads the simulator's view of the records: keep only their bytes
        on_request=on_request,
    )
    bootstrap = await server.start()

    async def act(action: str, broker: int) -> None:
        if broker not in cluster.brokers:
            raise ValueError(f"no broker {broker} (brokers: {', '.join(map(str, cluster.broker_ids))})")
        if action == "stop":
            await server.stop_broker(broker)
        else:
            await server.start_broker(broker)

    token = secrets.token_hex(16)
    endpoint = await control.serve(token, act)
    control_port = endpoint.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
    template = (
        f"{shlex.quote(sys.executable)} -m playground.simserver.control --port {control_port} --token {token} "
        "{action} {broker}"
    )
    out.write(f"KAFKA_BROKER_CONTROL={template}\n{bootstrap}\n")
    out.flush()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    endpoint.close()
    await server.close()


def main(argv: list[str] | None = None) -> int:
    # kio registers Hypothesis strategies for its types whenever Hypothesis can be imported (the test extras put it in
    # the venv): a server has no use for them, and they cost it half a second of start-up
    sys.modules.setdefault("hypothesis", None)  # type: ignore[arg-type]
    logging.basicConfig(level=logging.WARNING, format="simcluster: %(message)s")
    args = parser().parse_args(argv)
    try:
        run(vars(args))
    except UsageError as e:
        print(f"simcluster: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"simcluster: cannot listen: {e}", file=sys.stderr)
        return 1
    return 0
