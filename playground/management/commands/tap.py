"""`python manage.py tap --upstream BOOTSTRAP [--listen HOST:PORT] [--report FILE]`: a Kafka-protocol proxy in front
of a real cluster that sees who uses which transactional.id from where (playground/tap/cli.py). It prints its own
bootstrap list as its last line and serves until SIGTERM; with --report it writes its JSON report then and on
SIGUSR1; with --publish [NAME] it stores it in the database too, for the live page on any host. With
--record-session [TITLE] the clients' requests are recorded as a simulator session
(playground/session/taprecord.py) whose path it prints before the bootstrap list.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from playground.models import TapReport
from playground.session.taprecord import TapRecording
from playground.tap import cli


class Command(BaseCommand):
    help = "Serve a real cluster through the tap (one listener per broker) until SIGTERM, and report what it saw."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        cli.add_arguments(parser)

    def handle(self, *args, **options):
        try:
            cli.run(options, out=self.stdout, recording=TapRecording, publish=_publish)
        except cli.UsageError as e:
            raise CommandError(str(e)) from None
        except OSError as e:
            raise CommandError(f"tap: {e}") from None


def _publish(name: str, report: dict) -> None:
    try:
        TapReport.publish(name, report)
    finally:
        connection.close()  # a pool's thread (asyncio.to_thread): no connection left open between reports
