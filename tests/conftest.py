"""Suite-wide rules.

In CI (CI=true) a skipped test is a failure: the real broker, redis-server and Chromium are installed and started
by `make test`, so a skip there can only mean something is broken and would otherwise hide it.
"""

import os

import pytest


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI") != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped:
        reporter.write_line(f"CI: {skipped} test(s) skipped; in CI a skip is a failure", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
