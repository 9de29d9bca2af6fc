"""`python -m playground.tap --upstream BOOTSTRAP [--listen HOST:PORT] [--report FILE]`: `manage.py tap` without
Django (playground/tap/cli.py)."""

import sys

from playground.tap.cli import main

sys.exit(main())
