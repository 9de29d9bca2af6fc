"""`python manage.py simcluster --kafka 3.9|4 --nodes N --port P [--host H] [--config KEY=VALUE ...]`: the
simulated cluster as a Kafka server, one listener per broker (P, P+1, ...; `--port 0` picks free ports).

Once every listener accepts connections it prints `KAFKA_BROKER_CONTROL=<template>` (stops or starts one simulated
broker of this process, for the real backend's broker steps), then the bootstrap list as its last line, and serves
until SIGTERM (or SIGINT).
"""

from __future__ import annotations

import asyncio
import secrets
import shlex
import signal
import sys

from django.core.management.base import BaseCommand, CommandError

from playground.engine.spec import KAFKA_RELEASES
from playground.sim.cluster import Cluster
from playground.simserver import control
from playground.simserver.server import SimServer


class Command(BaseCommand):
    help = "Serve the simulated cluster over the Kafka protocol (one listener per broker) until SIGTERM."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("--kafka", choices=tuple(KAFKA_RELEASES), default="3.9", help="the Kafka release modelled")
        parser.add_argument("--nodes", type=int, default=3, help="brokers (1-9)")
        parser.add_argument("--port", type=int, default=9092, help="broker 1's port, then +1 per broker; 0: free ports")
        parser.add_argument("--host", default="127.0.0.1", help="the address to listen on and advertise")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--config",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a broker setting (transaction.abort.timed.out.transaction.cleanup.interval.ms, "
            "transactional.id.expiration.ms, auto.create.topics.enable, num.partitions, sim.* knobs, ...)",
        )
        parser.add_argument("--verbose", action="store_true", help="log every request (api, version) to stderr")

    def handle(self, *args, **options):
        nodes = options["nodes"]
        if not 1 <= nodes <= 9:
            raise CommandError("--nodes must be between 1 and 9")
        config = {}
        for item in options["config"]:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise CommandError(f"--config {item!r}: expected KEY=VALUE")
            config[key.strip()] = value.strip()
        try:
            asyncio.run(self._serve(options, nodes, config))
        except OSError as e:
            raise CommandError(f"cannot listen: {e}") from None

    async def _serve(self, options, nodes, config):
        cluster = Cluster(brokers=nodes, config=config, seed=options["seed"], keep_events=False, kafka=options["kafka"])
        on_request = None
        if options["verbose"]:

            def on_request(broker, api_key, name, version, _client):
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
        self.stdout.write(f"KAFKA_BROKER_CONTROL={template}")
        self.stdout.write(bootstrap)
        self.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        endpoint.close()
        await server.close()
        for failure in server.core.failures if server.core else ():
            print(f"simcluster: a request failed: {failure}", file=sys.stderr)
