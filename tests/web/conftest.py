"""Fixtures of the web tests: the fake backend registered as "fake", a clean live-session cache per test, the
in-memory channel layer, the site's language, and helpers to create sessions."""

from __future__ import annotations

import pytest
from django.utils import translation

from playground import session
from playground.session import capability
from playground.web import fanout

from .fake_backend import FakeBackend


@pytest.fixture(autouse=True)
def _web_env(settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    settings.PLAYGROUND_RUN_STEP_MS = 0
    settings.PLAYGROUND_LIMITS = {}
    settings.PLAYGROUND_DEFAULT_BACKEND = "fake"
    session.BACKEND_FACTORIES["fake"] = FakeBackend
    session.CACHE.clear()
    fanout.clear()
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    session.CACHE.clear()
    channel_layers.backends.clear()
    # A page asked for in Chinese activates Chinese in this thread (LocaleMiddleware) and leaves it so: the next test
    # starts in the site's language again.
    translation.deactivate()


def hold(client, row):
    """The test client holds the session's drive capability, as its creator's browser does."""
    client.cookies[capability.cookie_name(row.id)] = row.drive_secret
    return row


@pytest.fixture
def free_session(db, client):
    """A free-play session on the fake backend; the test client is its creator (it may drive)."""
    return hold(client, session.create(None, backend="fake"))


@pytest.fixture
def sim_session(client):
    """A free-play session on the simulator; the test client may drive."""
    return hold(client, session.create(None, backend="sim"))


@pytest.fixture
def fencing_session(db, settings, client):
    """The zombie-fencing scenario from the library, on the fake backend; the test client may drive."""
    from playground.scenario import library

    entry = library.find("zombie-fencing")
    assert entry is not None, "scenarios/02-zombie-fencing.yaml is missing"
    return hold(client, session.create(entry.scenario, source=entry.scenario.source, backend="fake"))


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server on a free loopback port, for the whole test session. Missing redis-server fails."""
    from playground.deploy import procs

    try:
        server = procs.start_redis(tmp_path_factory.mktemp("redis"))
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield server.extra["url"]
    server.stop()


@pytest.fixture
def redis_layer(settings, redis_server):
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer", "CONFIG": {"hosts": [redis_server]}}
    }
    channel_layers.backends.clear()
    yield redis_server
    channel_layers.backends.clear()


@pytest.fixture
def hops(monkeypatch):
    """The qualified names of what is sent to a thread (sync_to_async) while the fixture lasts."""
    from asgiref import sync

    names: list[str] = []
    real = sync.SyncToAsync.__init__

    def recording(self, func, *args, **kwargs):
        names.append(getattr(func, "__qualname__", repr(func)))
        real(self, func, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__init__", recording)
    return names
