#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["simcluster"]:
        # The simulated cluster needs nothing of Django's: skipping its start-up (the site's apps, most of a second)
        # is what lets `manage.py simcluster` accept connections within a second (playground/simserver/cli.py).
        from playground.simserver.cli import main

        sys.exit(main(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
