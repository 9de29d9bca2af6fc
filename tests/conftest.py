"""Suite-wide rules.

In CI (CI=true) a skipped test is a failure: the real broker, redis-server and Chromium are installed and started
by `make test`, so a skip there can only mean something is broken and would otherwise hide it.

PLAYGROUND_TEST_DATABASE=postgres runs every database test of the run on a throw-away PostgreSQL (tests/pg.py),
started before the first test and deleted after the last; unset (or "sqlite"), the tests use SQLite as configured.
When it asks for PostgreSQL and none can be started, the run fails: it never falls back to SQLite or skips.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

TEST_DATABASE = "PLAYGROUND_TEST_DATABASE"

# Property tests have no deadline: a deadline is a timed assertion, and make test runs these beside the real
# clusters' stages on a 2-core machine (a 354 ms example failed a 200 ms deadline there). Speed is make bench's.
settings.register_profile("playground", deadline=None)
settings.load_profile("playground")


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped:
        reporter.write_line(f"CI: {skipped} test(s) skipped; in CI a skip is a failure", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _wanted_database() -> str:
    kind = os.environ.get(TEST_DATABASE, "").strip().lower()
    if kind not in ("", "sqlite", "postgres"):
        pytest.exit(
            f"{TEST_DATABASE}={kind!r}: expected 'postgres', or unset (or 'sqlite') for SQLite",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    return kind


@pytest.fixture(scope="session")
def throwaway_postgres():
    """The throw-away PostgreSQL (tests.pg.Server) when PLAYGROUND_TEST_DATABASE=postgres, else None.

    While it runs, os.environ["DATABASE_URL"] names its `playground` database (through its unix socket), so that the
    servers a test starts (procs.django_env copies os.environ) use it; this process's own tests use pytest-django's
    test_playground on the same server.
    """
    if _wanted_database() != "postgres":
        yield None
        return
    from tests import pg

    try:
        server = pg.start()
    except pg.Unavailable as exc:
        # Not pytest.fail: that would repeat the same error once per test. One clear line and a failed run.
        pytest.exit(
            f"{TEST_DATABASE}=postgres, but the throw-away PostgreSQL could not be started: {exc}",
            returncode=pytest.ExitCode.TESTS_FAILED,
        )
    previous = os.environ.get("DATABASE_URL")
    os.environ["DATABASE_URL"] = server.socket_url()
    try:
        yield server
    finally:
        if previous is None:
            os.environ.pop("DATABASE_URL", None)
        else:
            os.environ["DATABASE_URL"] = previous
        server.stop()


@pytest.fixture(scope="session")
def django_db_modify_db_settings(request, throwaway_postgres):
    """pytest-django's hook before it creates the test databases: point `default` at the throw-away PostgreSQL,
    built by settings.database_settings from its URL exactly as the server would build it from DATABASE_URL."""
    if throwaway_postgres is not None:
        from django.conf import settings
        from django.db import connections

        from playground.settings import database_settings

        for conn in connections.all(initialized_only=True):
            conn.close()
        if hasattr(connections._connections, "default"):  # a sqlite wrapper made already: drop it
            del connections["default"]
        settings.DATABASES["default"] = database_settings(throwaway_postgres.socket_url())
        connections.__dict__.pop("settings", None)  # a cached_property: re-read, and defaults filled, on next use
        connections._settings = None
    # pytest-django's own version of this fixture adds the xdist/tox suffix to the test database names: after the
    # switch, so that it applies to the PostgreSQL entry.
    request.getfixturevalue("django_db_modify_db_settings_parallel_suffix")


@pytest.fixture(scope="session", autouse=True)
def _one_database_for_the_whole_run(request):
    """With PLAYGROUND_TEST_DATABASE=postgres, switch before the first test, database test or not: a test that only
    starts servers (two-process tests) must find DATABASE_URL set too, whatever tests ran before it."""
    if _wanted_database() == "postgres":
        request.getfixturevalue("django_db_modify_db_settings")
