"""`python -m playground.simserver [--kafka 3.9|4] [--nodes N] [--port P] ...`: `manage.py simcluster` without Django
(playground/simserver/cli.py)."""

import sys

from playground.simserver.cli import main

sys.exit(main())
