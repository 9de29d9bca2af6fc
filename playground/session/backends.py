"""Which backend a session runs on, how one is built, and what stands in for a real cluster this process lacks.

A simulated session is rebuilt by any process from its log (the simulator is deterministic). A real cluster
("kafka") is different: its state lives in the cluster, and replaying the log would re-run every command against
it. Such a session is *live* only in the process that created it (or re-ran or reset it); any other process shows
it *detached*: its actors and stored log, nothing of the cluster, every command refused with a sentence saying why.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils.translation import gettext

from playground.engine.backend import Backend, BackendError
from playground.engine.spec import (
    CONSUMER,
    DEFAULT_PROFILE,
    KAFKA_RELEASES,
    PRODUCER,
    ActorSpec,
    ClusterSpec,
    Profile,
    Step,
)
from playground.scenario.engines import make_backend
from playground.session.live import CommandError

if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec

# Django is untyped here (no stubs): its gettext gives a str.
_: Callable[[str], str] = gettext

# Backends by name. Tests add fakes here; "sim" and "kafka" go through `make_backend`.
BACKEND_FACTORIES: dict[str, Callable[..., Backend]] = {}

# Backends whose state is outside this process (a real cluster): never rebuilt by replaying the log behind the
# user's back. Tests add a fake's name here to exercise the same path without a broker.
LIVE_ONLY_BACKENDS: set[str] = {"kafka"}


def live_only(backend_name: str) -> bool:
    return backend_name in LIVE_ONLY_BACKENDS


def kafka_configured(profile: Profile | None = None) -> bool:
    """Whether this server names a real cluster for the profile's Kafka version (any version: no profile)."""
    from playground.kafka.clusters import SETTINGS

    versions = [profile.kafka] if profile is not None else list(KAFKA_RELEASES)
    # a version the real backend names no setting for (yet) has no cluster here
    return any(str(getattr(settings, SETTINGS[v][0], "") or "").strip() for v in versions if v in SETTINGS)


def java_worker_waiting(release: str) -> str | None:
    """None when a Java session of kafka-clients `release` can start now; else what its page says meanwhile (the
    worker is being built, or cannot be: kafka/java_worker.py)."""
    from playground.kafka.java_worker import waiting

    return waiting(release)


def not_configured(profile: Profile) -> str:
    from playground.kafka.clusters import SETTINGS

    if profile.kafka not in SETTINGS:
        return _("This server has no Kafka %(release)s cluster configured.") % {"release": profile.release}
    return _("This server has no Kafka %(release)s cluster configured (%(setting)s).") % {
        "release": profile.release,
        "setting": SETTINGS[profile.kafka][0],
    }


def cluster_problem(exc: BaseException, *, created: bool = False) -> str:
    """The sentence a user sees when the real cluster failed a request (the backend's detail only with DEBUG on:
    it names the server's cluster address)."""
    if created:
        text = _("The Kafka cluster cannot be reached right now, so no session was created. Try again in a moment.")
    else:
        text = _("The Kafka cluster did not do this: nothing was changed. Try again in a moment.")
    if settings.DEBUG and str(exc):
        text += " (" + str(exc) + ")"
    return text


def _extra_backend(name: str) -> Callable[..., Backend] | None:
    """settings.PLAYGROUND_BACKENDS = {"name": "module:Class"}: more backends (the tests' fake, in server processes)."""
    dotted = (getattr(settings, "PLAYGROUND_BACKENDS", {}) or {}).get(name)
    if not dotted:
        return None
    module, _sep, attr = dotted.partition(":")
    factory: Callable[..., Backend] = getattr(importlib.import_module(module), attr)
    return factory


def build(
    name: str,
    cluster: ClusterSpec,
    actors: Mapping[str, ActorSpec],
    seed: int,
    database: DatabaseSpec | None = None,
    profile: Profile = DEFAULT_PROFILE,
) -> Backend:
    """The backend for the session's profile, with the scenario's database beside it when it declares one
    (playground/scenario/database.py)."""
    factory = BACKEND_FACTORIES.get(name) or _extra_backend(name)
    if factory is not None:
        return _with_database(factory(cluster, actors, seed=seed, profile=profile), database)
    if name == "kafka" and not kafka_configured(profile):
        raise CommandError(not_configured(profile))
    if name not in ("sim", "kafka"):
        raise CommandError(_("Unknown backend %(b)s.") % {"b": name})
    backend = make_backend(
        name, cluster, actors, seed=seed, profile=profile, **({"keep_events": False} if name == "sim" else {})
    )
    return _with_database(backend, database)


def _with_database(backend: Backend, database: DatabaseSpec | None) -> Backend:
    """The scenario's database beside the backend. Building it can fail where the file's check passed (this
    server's limits are tighter, or its machine slower than the time limit allows): the scenario's problem."""
    from playground.scenario.database import SqlError, with_database

    try:
        return with_database(backend, database)
    except SqlError as exc:
        backend.close()
        raise CommandError(
            _("This scenario's database cannot be built here: %(e)s") % {"e": f"{exc.outcome}: {exc}"}, status=422
        ) from None


class DetachedBackend(Backend):
    """Stands in for a real-cluster backend that is not live in this process: shows the session's actors and
    nothing of the cluster (the narrative shows the stored log), and refuses every command."""

    name = "detached"

    def __init__(
        self,
        cluster: ClusterSpec,
        actors: Mapping[str, ActorSpec],
        *,
        seed: int = 0,
        on_event: Any = None,
        backend_name: str = "kafka",
        problem: str = "",
        profile: Profile = DEFAULT_PROFILE,
    ) -> None:
        self.cluster, self.actors, self.backend_name, self.problem = cluster, dict(actors), backend_name, problem
        self.profile = profile

    def add_actor(self, actor: ActorSpec) -> None:
        raise BackendError("this session is not live in this server process")

    def apply(self, step: Step) -> str:
        raise BackendError("this session is not live in this server process")

    def observe(self) -> dict[str, Any]:
        return {"partitions": {}, "consumers": {}, "transactions": {}, "groups": {}}

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        producers = {
            n: {
                "transactional_id": a.transactional_id,
                "producer_id": None,
                "epoch": None,
                "state": "UNKNOWN",
                "last_error": None,
                "fenced": False,
                "counters": {"app_sent_ok": 0, "landed": 0, "read_committed_received": 0},
            }
            for n, a in self.actors.items()
            if a.kind == PRODUCER
        }
        consumers = {
            n: {
                "isolation_level": a.config.get("isolation.level", "read_committed"),
                "group_id": a.config.get("group.id"),
                "topics": list(a.topics),
                "state": "UNKNOWN",
                "positions": {},
                "received": {},
            }
            for n, a in self.actors.items()
            if a.kind == CONSUMER
        }
        out = {
            "partitions": {},
            "consumers": consumers,
            "transactions": {},
            "groups": {},
            "backend": self.backend_name,
            "time_ms": 0,
            "brokers": {},
            "producers": producers,
            "timeline": [],
            "unobservable": [],
        }
        if self.problem:
            out["observe_error"] = self.problem
        return out


def detached_message(reason: str) -> str:
    if reason == "ended":
        return _(
            "This real-cluster session has ended and its topics were deleted. Re-run its log on fresh topics, or reset it, to continue."
        )
    if reason == "moved":
        return _(
            "This real-cluster session was re-run or reset in another server process, which now holds it; open its link again, or re-run it here on fresh topics."
        )
    return _(
        "This real-cluster session is not live in this server process (another process holds it, or the server restarted): its stored log is shown, not re-run against the cluster. Re-run it on fresh topics to continue."
    )
