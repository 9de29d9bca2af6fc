"""`python manage.py simcluster --kafka 3.9|4 --nodes N --port P [--host H] [--config KEY=VALUE ...]`: the
simulated cluster as a Kafka server, one listener per broker (P, P+1, ...; `--port 0` picks free ports).

Once every listener accepts connections it prints `KAFKA_BROKER_CONTROL=<template>` (stops or starts one simulated
broker of this process, for the real backend's broker steps), then the bootstrap list as its last line, and serves
until SIGTERM (or SIGINT). The same as `python -m playground.simserver` (playground/simserver/cli.py), which skips
Django's start-up.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from playground.simserver import cli


class Command(BaseCommand):
    help = "Serve the simulated cluster over the Kafka protocol (one listener per broker) until SIGTERM."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        cli.add_arguments(parser)

    def handle(self, *args, **options):
        try:
            cli.run(options, out=self.stdout)
        except cli.UsageError as e:
            raise CommandError(str(e)) from None
        except OSError as e:
            raise CommandError(f"cannot listen: {e}") from None
