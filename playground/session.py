"""A live session: a scenario (or free play), a backend, a seed and the command log (design.md, principle 4).

Applying a command: validate -> `backend.apply(step)` -> append to the log in the database -> render the panels
ONCE per language -> `group_send` to "session-<id>". Any process rebuilds a simulated session by replaying its
log (the simulator is deterministic), so a process catches up by replay before it applies or renders anything;
it keeps the backends it built in an in-process cache together with the log version they reflect.

A real cluster ("kafka") is different: its state lives in the cluster, and replaying the log would re-run every
command against it. Such a session is *live* only in the process that created it (or re-ran or reset it); that
process keeps its backend until the session is reset, ended, idle for PLAYGROUND_KAFKA_IDLE_S, evicted or the
process exits, and closing the backend deletes the session's topics. Any other process (or the same one after a
restart) shows a *detached* session: the stored command log, and a clear statement that the cluster's state is
not re-run, with a button that re-runs the log on fresh topics (a new prefix) when the user asks for it.

Everything here is synchronous (Django ORM, the backend). Under Daphne, sync code runs in one thread per process
(`sync_to_async(thread_sensitive=True)`), and a lock per session guards the rest.
"""

from __future__ import annotations

import atexit
import hashlib
import hmac
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Mapping

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from playground import limits
from playground.backend import Backend, BackendError, make_backend
from playground.models import Session
from playground.spec import (
    CLUSTER_ACTORS,
    CONSUMER,
    CONSUMER_ACTIONS,
    NOTE,
    PRODUCER,
    PRODUCER_ACTIONS,
    ActorSpec,
    ClusterSpec,
    Step,
    TopicSpec,
)

log = logging.getLogger(__name__)

GROUP_PREFIX = "session-"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class CommandError(Exception):
    """Bad input: the user gets a 4xx with this message and the session is unchanged."""

    status = 400

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def group_name(session_id: str) -> str:
    return f"{GROUP_PREFIX}{session_id}"


# --------------------------------------------------------------------------------------------------- free play
def free_play_cluster() -> ClusterSpec:
    return ClusterSpec(brokers=3, topics=(TopicSpec("orders", 3),))


def free_play_actors() -> dict[str, ActorSpec]:
    return {
        "rc": ActorSpec("rc", CONSUMER, {"isolation.level": "read_committed"}, ("orders",)),
        "ru": ActorSpec("ru", CONSUMER, {"isolation.level": "read_uncommitted"}, ("orders",)),
    }


# ------------------------------------------------------------------------------------------- steps as logged
def step_from_entry(obj: Any, index: int = 0) -> Step:
    """A step in the scenario file's own form (what `Step.to_dict()` gives) back into a `Step`."""
    if isinstance(obj, str):
        actor, _sep, action = obj.partition(".")
        return Step(actor=actor, action=action, index=index)
    if isinstance(obj, Mapping) and len(obj) == 1:
        ((label, args),) = obj.items()
        if label == NOTE:
            text = args if isinstance(args, Mapping) else {"en": str(args)}
            return Step(actor=NOTE, action=NOTE, args={"text": dict(text)}, index=index)
        actor, _sep, action = str(label).partition(".")
        args = dict(args or {})
        expect = args.pop("expect", None)
        if expect is not None:
            expect = tuple(expect) if isinstance(expect, (list, tuple)) else (str(expect),)
        return Step(actor=actor, action=action, args=args, expect=expect, index=index)
    raise ValueError(f"not a step: {obj!r}")


def actor_to_entry(spec: ActorSpec) -> dict[str, Any]:
    body: dict[str, Any] = dict(spec.config)
    if spec.kind == CONSUMER:
        body["topics"] = list(spec.topics)
    return {spec.name: {spec.kind: body}}


def actor_from_entry(obj: Mapping[str, Any]) -> ActorSpec:
    ((name, decl),) = obj.items()
    ((kind, body),) = decl.items()
    body = dict(body)
    topics = tuple(body.pop("topics", ()) or ())
    return ActorSpec(name=name, kind=kind, config=body, topics=topics)


# --------------------------------------------------------------------------------------------- the live part
@dataclass
class Live:
    """A backend built in this process, and the log version it reflects."""

    session_id: str
    backend_name: str
    seed: int
    scenario: Any  # playground.scenario.Scenario | None
    cluster: ClusterSpec
    actors: dict[str, ActorSpec]
    backend: Backend
    version: int = 0
    commands: list[dict[str, Any]] = field(default_factory=list)
    running: bool = False
    last_error: str | None = None
    # A real-cluster session that is not live in this process: "" (live), "not_here" (created by another process,
    # or before a restart, or closed for idleness), "moved" (re-run or reset in another process), "ended".
    detached: str = ""
    last_used: float = field(default_factory=time.monotonic)

    @property
    def steps(self) -> tuple[Step, ...]:
        return tuple(self.scenario.steps) if self.scenario is not None else ()

    @property
    def cursor(self) -> int:
        """How many of the scenario's steps have been applied (the narrative's position)."""
        done = [e["n"] for e in self.commands if "n" in e]
        return (max(done) + 1) if done else 0

    def producers(self) -> list[str]:
        return [n for n, a in self.actors.items() if a.kind == PRODUCER]

    def consumers(self) -> list[str]:
        return [n for n, a in self.actors.items() if a.kind == CONSUMER]

    def topics(self) -> dict[str, int]:
        return {t.name: t.partitions for t in self.cluster.topics}

    def transactional_ids(self) -> list[str]:
        seen: list[str] = []
        for a in self.actors.values():
            if a.kind == PRODUCER and a.transactional_id and a.transactional_id not in seen:
                seen.append(a.transactional_id)
        return seen


# Backends by name. Tests add fakes here; "sim" and "kafka" go through `make_backend`.
BACKEND_FACTORIES: dict[str, Callable[..., Backend]] = {}

# Backends whose state is outside this process (a real cluster): never rebuilt by replaying the log behind the
# user's back. Tests add a fake's name here to exercise the same path without a broker.
LIVE_ONLY_BACKENDS: set[str] = {"kafka"}


def live_only(backend_name: str) -> bool:
    return backend_name in LIVE_ONLY_BACKENDS


def kafka_configured() -> bool:
    return bool(str(getattr(settings, "KAFKA_BOOTSTRAP_SERVERS", "") or "").strip())


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


class DetachedBackend(Backend):
    """Stands in for a real-cluster backend that is not live in this process: shows the session's actors and
    nothing of the cluster (the narrative shows the stored log), and refuses every command."""

    name = "detached"

    def __init__(self, cluster: ClusterSpec, actors: Mapping[str, ActorSpec], *, seed: int = 0, on_event: Any = None,
                 backend_name: str = "kafka", problem: str = "") -> None:
        self.cluster, self.actors, self.backend_name, self.problem = cluster, dict(actors), backend_name, problem

    def add_actor(self, actor: ActorSpec) -> None:
        raise BackendError("this session is not live in this server process")

    def apply(self, step: Step) -> str:
        raise BackendError("this session is not live in this server process")

    def observe(self) -> dict[str, Any]:
        return {"partitions": {}, "consumers": {}, "transactions": {}, "groups": {}}

    def view(self, log_limit: int = 200) -> dict[str, Any]:
        producers = {
            n: {"transactional_id": a.transactional_id, "producer_id": None, "epoch": None, "state": "UNKNOWN",
                "last_error": None, "fenced": False, "counters": {"app_sent_ok": 0, "landed": 0, "read_committed_received": 0}}
            for n, a in self.actors.items() if a.kind == PRODUCER
        }
        consumers = {
            n: {"isolation_level": a.config.get("isolation.level", "read_committed"), "group_id": a.config.get("group.id"),
                "topics": list(a.topics), "state": "UNKNOWN", "positions": {}, "received": {}}
            for n, a in self.actors.items() if a.kind == CONSUMER
        }
        out = {"partitions": {}, "consumers": consumers, "transactions": {}, "groups": {}, "backend": self.backend_name,
               "time_ms": 0, "brokers": {}, "producers": producers, "timeline": [], "unobservable": [], "consumers_received": {}}
        if self.problem:
            out["observe_error"] = self.problem
        return out


def _extra_backend(name: str) -> Callable[..., Backend] | None:
    """settings.PLAYGROUND_BACKENDS = {"name": "module:Class"}: more backends (the tests' fake, in server processes)."""
    dotted = (getattr(settings, "PLAYGROUND_BACKENDS", {}) or {}).get(name)
    if not dotted:
        return None
    import importlib

    module, _sep, attr = dotted.partition(":")
    return getattr(importlib.import_module(module), attr)


def _build_backend(name: str, cluster: ClusterSpec, actors: Mapping[str, ActorSpec], seed: int) -> Backend:
    factory = BACKEND_FACTORIES.get(name) or _extra_backend(name)
    if factory is not None:
        return factory(cluster, actors, seed=seed)
    if name == "kafka" and not kafka_configured():
        raise CommandError(_("This server has no Kafka cluster configured (KAFKA_BOOTSTRAP_SERVERS)."))
    if name not in ("sim", "kafka"):
        raise CommandError(_("Unknown backend %(b)s.") % {"b": name})
    return make_backend(name, cluster, actors, seed=seed)


class _Cache:
    """Live backends of this process, least recently used first; bounded."""

    def __init__(self) -> None:
        self._items: OrderedDict[str, Live] = OrderedDict()
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()

    def lock(self, session_id: str) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault(session_id, threading.RLock())

    def get(self, session_id: str) -> Live | None:
        self.reap_idle()
        with self._guard:
            live = self._items.get(session_id)
            if live is not None:
                self._items.move_to_end(session_id)
                live.last_used = time.monotonic()
            return live

    def put(self, live: Live) -> None:
        size = int(getattr(settings, "PLAYGROUND_LIVE_SESSIONS", 200))
        evicted: list[Live] = []
        with self._guard:
            live.last_used = time.monotonic()
            self._items[live.session_id] = live
            self._items.move_to_end(live.session_id)
            while len(self._items) > size:
                _sid, old = self._items.popitem(last=False)
                evicted.append(old)
        for old in evicted:
            _close(old)

    def reap_idle(self) -> None:
        """A real-cluster session nobody touched for PLAYGROUND_KAFKA_IDLE_S has ended: close it (its topics are
        deleted); it shows as detached afterwards and can be re-run."""
        idle = float(getattr(settings, "PLAYGROUND_KAFKA_IDLE_S", 3600))
        now = time.monotonic()
        with self._guard:
            stale = [sid for sid, lv in self._items.items()
                     if live_only(lv.backend_name) and not lv.detached and now - lv.last_used > idle]
            lives = [self._items.pop(sid) for sid in stale]
        for lv in lives:
            log.info("session %s: idle for %.0f s, closing its real-cluster backend", lv.session_id, now - lv.last_used)
            _close(lv)

    def evict(self, session_id: str) -> None:
        with self._guard:
            live = self._items.pop(session_id, None)
        if live is not None:
            _close(live)

    def clear(self) -> None:
        with self._guard:
            items = list(self._items.values())
            self._items.clear()
        for live in items:
            _close(live)


def _close(live: Live) -> None:
    try:
        live.backend.close()
    except Exception:  # noqa: BLE001 - closing must never take a request down
        log.exception("closing the backend of session %s", live.session_id)


CACHE = _Cache()


def _close_live_only_at_exit() -> None:
    """A server that stops ends its real-cluster sessions: their topics are deleted (best effort)."""
    with CACHE._guard:
        lives = [lv for lv in CACHE._items.values() if live_only(lv.backend_name) and not lv.detached]
        for lv in lives:
            CACHE._items.pop(lv.session_id, None)
    for lv in lives:
        _close(lv)


atexit.register(_close_live_only_at_exit)


def _scenario_from_source(row: Session) -> Any:
    from playground.scenario import parse_scenario

    return parse_scenario(row.scenario_source, f"{row.scenario_id}.yaml")


def _spec_of(row: Session) -> tuple[Any, ClusterSpec, dict[str, ActorSpec]]:
    if row.scenario_id:
        from playground.scenario import ScenarioError

        try:
            scenario = _scenario_from_source(row)
        except ScenarioError as exc:
            raise CommandError(_("This session's scenario no longer loads: %(e)s") % {"e": exc}, status=422) from exc
        cluster, actors = scenario.cluster, dict(scenario.actors)
    else:
        scenario, cluster, actors = None, free_play_cluster(), free_play_actors()
    return scenario, cluster, actors


def _fresh_live(row: Session, *, creating: bool = True) -> Live:
    scenario, cluster, actors = _spec_of(row)
    try:
        backend = _build_backend(row.backend, cluster, actors, row.seed)
    except BackendError as exc:
        log.warning("session %s: the %s backend did not start: %s", row.id, row.backend, exc)
        raise CommandError(cluster_problem(exc, created=creating), status=503) from exc
    return Live(row.id, row.backend, row.seed, scenario, cluster, actors, backend)


def _detached_live(row: Session, reason: str) -> Live:
    """What another process shows of a real-cluster session: its actors and its stored log, no cluster state."""
    scenario, cluster, actors = _spec_of(row)
    for entry in row.commands:
        if "add" in entry:
            spec = actor_from_entry(entry["add"])
            actors[spec.name] = spec
    backend = DetachedBackend(cluster, actors, backend_name=row.backend)
    return Live(row.id, row.backend, row.seed, scenario, cluster, actors, backend, version=row.version,
                commands=list(row.commands), running=row.running, detached=reason or "not_here")


def detached_message(live: Live) -> str:
    if live.detached == "ended":
        return _("This real-cluster session has ended and its topics were deleted. Re-run its log on fresh topics, or reset it, to continue.")
    if live.detached == "moved":
        return _("This real-cluster session was re-run or reset in another server process, which now holds it; open its link again, or re-run it here on fresh topics.")
    return _("This real-cluster session is not live in this server process (another process holds it, or the server restarted): its stored log is shown, not re-run against the cluster. Re-run it on fresh topics to continue.")


def _replay_entry(live: Live, entry: Mapping[str, Any]) -> str:
    if "add" in entry:
        spec = actor_from_entry(entry["add"])
        live.backend.add_actor(spec)
        live.actors[spec.name] = spec
        return "ok"
    step = step_from_entry(entry["step"], int(entry.get("n", 0)))
    outcome = live.backend.apply(step)
    if entry.get("outcome") not in (None, outcome):
        log.warning(
            "session %s replay: %s gave %s, the log says %s", live.session_id, step.label, outcome, entry["outcome"]
        )
    return outcome


def _catch_up_live_only(row: Session) -> Live:
    """A real-cluster session: the live backend of this process if it is current, else a detached view (never a
    replay against the cluster)."""
    live = CACHE.get(row.id)
    reason = "not_here"
    if live is not None and not live.detached:
        if live.version == row.version:
            live.running = row.running
            return live
        # The log changed in another process (a re-run or a reset there): that process holds the cluster state now.
        CACHE.evict(row.id)  # closes ours: our topics are deleted
        live, reason = None, "moved"
    if live is not None and live.version == row.version:
        live.running = row.running
        return live
    if live is not None:
        reason = live.detached
    live = _detached_live(row, reason)
    CACHE.put(live)
    return live


def _catch_up(row: Session) -> Live:
    """The live session for a database row, replaying whatever this process has not applied yet."""
    if live_only(row.backend):
        return _catch_up_live_only(row)
    live = CACHE.get(row.id)
    commands = list(row.commands)
    if live is not None and live.version == row.version:
        live.running = row.running
        return live
    if live is None or live.commands != commands[: len(live.commands)]:
        if live is not None:
            CACHE.evict(row.id)
        live = _fresh_live(row)
    try:
        for entry in commands[len(live.commands) :]:
            _replay_entry(live, entry)
            live.commands.append(entry)
    except Exception:
        _close(live)
        CACHE.evict(row.id)
        raise
    live.version = row.version
    live.running = row.running
    CACHE.put(live)
    return live


def load(session_id: str) -> Live:
    """The session as it is now in the database (replayed in this process if needed)."""
    with CACHE.lock(session_id):
        try:
            row = Session.objects.get(pk=session_id)
        except Session.DoesNotExist:
            raise CommandError(_("No session %(id)s.") % {"id": session_id}, status=404) from None
        return _catch_up(row)


def exists(session_id: str) -> bool:
    return bool(session_id) and Session.objects.filter(pk=session_id).exists()


# ------------------------------------------------------------------------------------------------ creating
def client_key(address: str | None) -> str:
    secret = settings.SECRET_KEY.encode()
    return hmac.new(secret, (address or "?").encode(), hashlib.sha256).hexdigest()[:32]


def create(
    scenario: Any | None,
    *,
    source: str = "",
    backend: str = "sim",
    seed: int | None = None,
    client: str = "",
) -> Session:
    """A new session for a scenario (with the exact text it was loaded from) or free play (scenario None)."""
    if client:
        since = timezone.now() - timedelta(seconds=60)
        limits.check_sessions_per_minute(Session.objects.filter(client_key=client, created_at__gte=since).count())
    if scenario is not None:
        row = Session(
            scenario_id=scenario.id,
            scenario_source=source,
            backend=backend,
            seed=scenario.seed if seed is None else seed,
            client_key=client,
        )
    else:
        row = Session(backend=backend, seed=seed or 0, client_key=client)
    # Build it once now: a scenario that fails to load or a backend that cannot start is the creator's error.
    live = _fresh_live(row)
    try:
        row.save(force_insert=True)
    except Exception:
        _close(live)
        raise
    live.session_id = row.id
    live.version = row.version
    CACHE.put(live)
    return row


# ------------------------------------------------------------------------------------------------ mutating
@dataclass
class Change:
    """What a command did: the entries appended, or the new log when it was rewritten (back, reset)."""

    append: list[dict[str, Any]] = field(default_factory=list)
    rewrite: list[dict[str, Any]] | None = None
    running: bool | None = None
    message: str = ""


def _commit(
    session_id: str, mutate: Callable[[Live], Change], *, publish: bool = True, allow_detached: bool = False
) -> tuple[Live, Change]:
    """Catch up, let `mutate` validate and apply to the live backend, then store the result in the log.

    `mutate` raises CommandError before touching the backend when the input is bad. When the database row moved
    under us (another process appended first), the backend we changed is dropped and we try again on top.
    """
    with CACHE.lock(session_id):
        for _attempt in range(5):
            try:
                row = Session.objects.get(pk=session_id)
            except Session.DoesNotExist:
                raise CommandError(_("No session %(id)s.") % {"id": session_id}, status=404) from None
            live = _catch_up(row)
            if live.detached and not allow_detached:
                raise CommandError(detached_message(live), status=409)
            try:
                change = mutate(live)
            except (CommandError, limits.LimitExceeded):
                raise
            except BackendError as exc:
                if live_only(live.backend_name):
                    # The real backend checks the cluster before it acts: the session is as it was; keep it, so
                    # the same command can simply be tried again once the cluster answers.
                    log.warning("session %s: %s", session_id, exc)
                    raise CommandError(cluster_problem(exc), status=503) from exc
                CACHE.evict(session_id)
                raise CommandError(str(exc)) from exc
            except Exception as exc:
                # A bug in a backend must not turn into a half-applied session: drop what we built, keep the log.
                log.exception("session %s: the backend failed", session_id)
                CACHE.evict(session_id)
                raise CommandError(_("The backend failed on this command: %(e)s") % {"e": exc}, status=422) from exc
            if change.rewrite is None and not change.append and change.running is None:
                return live, change
            new_commands = list(change.rewrite) if change.rewrite is not None else list(row.commands) + change.append
            fields: dict[str, Any] = {"commands": new_commands, "version": row.version + 1, "updated_at": timezone.now()}
            if change.running is not None:
                fields["running"] = change.running
            with transaction.atomic():
                updated = Session.objects.filter(pk=session_id, version=row.version).update(**fields)
            if not updated:
                CACHE.evict(session_id)
                continue
            if change.rewrite is not None:
                # Time travel: rebuild from the rewritten log (deterministic replay).
                CACHE.evict(session_id)
                row.commands, row.version = new_commands, row.version + 1
                row.running = fields.get("running", row.running)
                live = _catch_up(row)
            else:
                live.commands = new_commands
                live.version = row.version + 1
                if change.running is not None:
                    live.running = change.running
            break
        else:
            raise CommandError(_("The session is busy; try again."), status=409)
    if publish:
        from playground.broadcast import publish as _publish

        _publish(live)
    return live, change


def _check_actor(live: Live, name: str, kind: str | None = None) -> ActorSpec:
    spec = live.actors.get(name)
    if spec is None:
        raise CommandError(_("There is no actor %(name)s in this session.") % {"name": name})
    if kind is not None and spec.kind != kind:
        raise CommandError(_("%(name)s is not a %(kind)s.") % {"name": name, "kind": kind})
    return spec


def validate_step(live: Live, step: Step) -> None:
    """Everything the backend would call the tool's problem, caught before it gets there."""
    if step.is_note:
        return
    if step.actor in CLUSTER_ACTORS:
        if step.action not in CLUSTER_ACTORS[step.actor]:
            raise CommandError(_("Unknown action %(a)s.") % {"a": step.label})
        if step.actor == "broker":
            broker = step.args.get("broker")
            if not isinstance(broker, int) or isinstance(broker, bool) or not 1 <= broker <= live.cluster.brokers:
                raise CommandError(_("No broker %(b)s: brokers are 1 to %(n)d.") % {"b": broker, "n": live.cluster.brokers})
        if step.actor == "clock":
            ms = step.args.get("ms")
            if not isinstance(ms, int) or isinstance(ms, bool) or not 1 <= ms <= limits.limit("clock_advance_s") * 1000:
                raise CommandError(_("Advance the clock by 1 ms to %(n)d s.") % {"n": limits.limit("clock_advance_s")})
        return
    spec = _check_actor(live, step.actor)
    actions = PRODUCER_ACTIONS if spec.kind == PRODUCER else CONSUMER_ACTIONS
    if step.action not in actions:
        raise CommandError(_("%(actor)s cannot %(action)s.") % {"actor": step.actor, "action": step.action})
    if step.action == "produce":
        topic = step.args.get("topic")
        topics = live.topics()
        if topic not in topics:
            raise CommandError(_("No topic %(t)s in this session.") % {"t": topic})
        partition = step.args.get("partition")
        if partition is not None and not (isinstance(partition, int) and 0 <= partition < topics[topic]):
            raise CommandError(_("Topic %(t)s has partitions 0 to %(n)d.") % {"t": topic, "n": topics[topic] - 1})
        limits.check_value(step.args.get("value"), "value")
        limits.check_value(step.args.get("key"), "key")
        if "from" in step.args:
            _check_actor(live, step.args["from"], CONSUMER)
    if step.action == "poll" and "max" in step.args:
        limits.check_records(int(step.args["max"]))
    if step.action == "send_offsets_to_transaction":
        consumer = _check_actor(live, step.args.get("consumer", ""), CONSUMER)
        if not consumer.group_id:
            raise CommandError(_("%(c)s has no group.id: send_offsets_to_transaction needs a group consumer.") % {"c": consumer.name})


def apply_step(session_id: str, step: Step) -> tuple[Live, str]:
    """A command from the UI (a button, a form): one step outside the scenario's narrative."""

    def mutate(live: Live) -> Change:
        limits.check_commands(len(live.commands) + 1)
        validate_step(live, step)
        outcome = live.backend.apply(step)
        return Change(append=[{"step": step.to_dict(), "outcome": outcome}], message=outcome)

    live, change = _commit(session_id, mutate)
    return live, change.message


def _next_scenario_step(live: Live) -> Change:
    steps = live.steps
    k = live.cursor
    if k >= len(steps):
        return Change(running=False if live.running else None, message="end")
    limits.check_commands(len(live.commands) + 1)
    step = steps[k]
    outcome = live.backend.apply(step)
    entry = {"step": step.to_dict(), "n": k, "outcome": outcome}
    done = k + 1 >= len(steps)
    return Change(append=[entry], running=False if (done and live.running) else None, message=outcome)


def step(session_id: str) -> tuple[Live, str]:
    """The scenario's next step ("step" button)."""

    def mutate(live: Live) -> Change:
        if live.scenario is None:
            raise CommandError(_("Free play has no scenario steps."))
        if live.cursor >= len(live.steps):
            raise CommandError(_("The scenario is over: reset to play it again."), status=409)
        return _next_scenario_step(live)

    live, change = _commit(session_id, mutate)
    return live, change.message


def run_one(session_id: str) -> bool:
    """One step of a "run": applies the next scenario step if the session is still running. False: stop."""

    def mutate(live: Live) -> Change:
        if not live.running or live.scenario is None:
            return Change()
        return _next_scenario_step(live)

    live, change = _commit(session_id, mutate)
    return live.running and live.cursor < len(live.steps) and change.message != "end"


def set_running(session_id: str, running: bool) -> Live:
    def mutate(live: Live) -> Change:
        if running:
            if live.scenario is None:
                raise CommandError(_("Free play has no scenario steps to run."))
            if live.cursor >= len(live.steps):
                raise CommandError(_("The scenario is over: reset to play it again."), status=409)
        if live.running == running:
            return Change()
        return Change(running=running)

    live, _change = _commit(session_id, mutate, allow_detached=not running)
    return live


def back(session_id: str) -> Live:
    """Time travel one step back: the log rebuilt without the last scenario step (and what came after it); in
    free play, without the last command."""

    def mutate(live: Live) -> Change:
        if live_only(live.backend_name):
            raise CommandError(_("A real cluster cannot be rewound: reset starts again on fresh topics."), status=409)
        if not live.commands:
            raise CommandError(_("Nothing to undo: this is the start."), status=409)
        if live.scenario is not None and live.cursor > 0:
            k = live.cursor - 1
            cut = next(i for i, e in enumerate(live.commands) if e.get("n") == k)
        else:
            cut = len(live.commands) - 1
        return Change(rewrite=live.commands[:cut], running=False)

    live, _change = _commit(session_id, mutate)
    return live


def reset(session_id: str) -> Live:
    """Start again: a new, empty log (free play keeps the actors that were added). On a real cluster: a fresh
    backend (new topics under a new prefix) and the old one closed, its topics deleted."""
    if _backend_of(session_id) in LIVE_ONLY_BACKENDS:
        return _restart_live_only(session_id, lambda live: [e for e in live.commands if "add" in e] if live.scenario is None else [])

    def mutate(live: Live) -> Change:
        keep = [e for e in live.commands if "add" in e] if live.scenario is None else []
        if keep == live.commands and not live.running:
            return Change()
        return Change(rewrite=keep, running=False)

    live, _change = _commit(session_id, mutate)
    return live


def _backend_of(session_id: str) -> str:
    row = Session.objects.filter(pk=session_id).values_list("backend", flat=True).first()
    if row is None:
        raise CommandError(_("No session %(id)s.") % {"id": session_id}, status=404)
    return row


def _restart_live_only(session_id: str, entries_of: Callable[[Live], list[dict[str, Any]]], *, need_detached: bool = False) -> Live:
    """A real-cluster session on a fresh backend (new topics under a new prefix), the given entries of its log
    applied again against the cluster, their new outcomes stored; the old backend is closed (its topics deleted).
    If the cluster does not answer, nothing changes and the user can try again."""
    with CACHE.lock(session_id):
        try:
            row = Session.objects.get(pk=session_id)
        except Session.DoesNotExist:
            raise CommandError(_("No session %(id)s.") % {"id": session_id}, status=404) from None
        old = _catch_up(row)
        if need_detached and not old.detached:
            raise CommandError(_("This session is live here already: nothing to re-run."), status=409)
        entries = entries_of(old)
        fresh = _fresh_live(row, creating=False)  # an unreachable cluster: CommandError 503, nothing changed
        try:
            for entry in entries:
                outcome = _replay_entry(fresh, entry)
                fresh.commands.append({**entry, "outcome": outcome})
        except BackendError as exc:
            _close(fresh)
            log.warning("session %s: re-running on the cluster failed: %s", session_id, exc)
            raise CommandError(cluster_problem(exc), status=503) from exc
        except Exception as exc:
            _close(fresh)
            log.exception("session %s: re-running on the cluster failed", session_id)
            raise CommandError(_("The backend failed on this command: %(e)s") % {"e": exc}, status=422) from exc
        with transaction.atomic():
            updated = Session.objects.filter(pk=session_id, version=row.version).update(
                commands=fresh.commands, version=row.version + 1, running=False, updated_at=timezone.now()
            )
        if not updated:
            _close(fresh)
            raise CommandError(_("The session is busy; try again."), status=409)
        fresh.version, fresh.running = row.version + 1, False
        CACHE.evict(session_id)  # the old backend, if this process had one: closed, its topics deleted
        CACHE.put(fresh)
    from playground.broadcast import publish as _publish

    _publish(fresh)
    return fresh


def rerun(session_id: str) -> Live:
    """A detached real-cluster session, live again here: its whole log re-run on fresh topics (the user asked)."""
    if _backend_of(session_id) not in LIVE_ONLY_BACKENDS:
        raise CommandError(_("Only a real-cluster session is re-run: this one replays by itself."), status=409)
    return _restart_live_only(session_id, lambda live: list(live.commands), need_detached=True)


def end(session_id: str) -> Live:
    """End a real-cluster session: close its backend (its topics and groups are deleted). The log stays; the
    session shows as ended and can be re-run or reset."""
    if _backend_of(session_id) not in LIVE_ONLY_BACKENDS:
        raise CommandError(_("Only a real-cluster session has topics to delete."), status=409)
    with CACHE.lock(session_id):
        row = Session.objects.get(pk=session_id)
        live = _catch_up(row)
        if live.detached:
            raise CommandError(detached_message(live), status=409)
        version = row.version
        if row.running:
            version += 1
            Session.objects.filter(pk=session_id).update(running=False, version=version, updated_at=timezone.now())
            row.running, row.version = False, version
        CACHE.evict(session_id)
        live = _detached_live(row, "ended")
        CACHE.put(live)
    from playground.broadcast import publish as _publish

    _publish(live)
    return live


def _free_name(live: Live, candidates) -> str:
    for name in candidates:
        if name not in live.actors:
            return name
    raise CommandError(_("No free actor name."))


def _producer_names():
    letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    yield from letters
    for i in range(2, 1000):
        yield from (f"{c}{i}" for c in letters)


def add_producer(session_id: str, mode: str, transactional_id: str | None = None) -> tuple[Live, str]:
    """"share" an existing transactional id, take a "new" one, or a "plain" (idempotent, not transactional) one."""

    def mutate(live: Live) -> Change:
        limits.check_producers(len(live.producers()) + 1)
        limits.check_commands(len(live.commands) + 1)
        if mode == "share":
            if transactional_id not in live.transactional_ids():
                raise CommandError(_("No producer uses transactional id %(t)s yet.") % {"t": transactional_id})
            config = {"transactional.id": transactional_id}
        elif mode == "new":
            if transactional_id:
                if len(transactional_id) > limits.limit("name_chars") or not NAME_RE.match(transactional_id):
                    raise CommandError(_("A transactional id is letters, digits, '.', '_' or '-' (at most %(n)d).") % {"n": limits.limit("name_chars")})
                if transactional_id in live.transactional_ids():
                    raise CommandError(_("Transactional id %(t)s is taken: use share.") % {"t": transactional_id})
                txid = transactional_id
            else:
                used = set(live.transactional_ids())
                txid = next(f"txn-{i}" for i in range(1, 10_000) if f"txn-{i}" not in used)
            config = {"transactional.id": txid}
        elif mode == "plain":
            config = {}
        else:
            raise CommandError(_("Add a producer with mode share, new or plain."))
        name = _free_name(live, _producer_names())
        # As the scenario loader does: a producer is idempotent unless it says otherwise (librdkafka's own default
        # is not), so "plain" means idempotent, not transactional, on both backends.
        config.setdefault("enable.idempotence", True)
        spec = ActorSpec(name=name, kind=PRODUCER, config=config)
        live.backend.add_actor(spec)
        live.actors[name] = spec
        return Change(append=[{"add": actor_to_entry(spec), "outcome": "ok"}], message=name)

    live, change = _commit(session_id, mutate)
    return live, change.message


def add_consumer(session_id: str, isolation: str, group: str | None = None) -> tuple[Live, str]:
    def mutate(live: Live) -> Change:
        if isolation not in ("read_committed", "read_uncommitted"):
            raise CommandError(_("Isolation level is read_committed or read_uncommitted."))
        if group and (len(group) > limits.limit("name_chars") or not NAME_RE.match(group)):
            raise CommandError(_("A group id is letters, digits, '.', '_' or '-' (at most %(n)d).") % {"n": limits.limit("name_chars")})
        limits.check_consumers(len(live.consumers()) + 1)
        limits.check_commands(len(live.commands) + 1)
        prefix = "g" if group else ("rc" if isolation == "read_committed" else "ru")
        name = _free_name(live, (f"{prefix}{i}" for i in range(1, 1000)))
        config: dict[str, Any] = {"isolation.level": isolation}
        if group:
            config["group.id"] = group
        topics = tuple(t.name for t in live.cluster.topics)
        spec = ActorSpec(name=name, kind=CONSUMER, config=config, topics=topics)
        live.backend.add_actor(spec)
        live.actors[name] = spec
        return Change(append=[{"add": actor_to_entry(spec), "outcome": "ok"}], message=name)

    live, change = _commit(session_id, mutate)
    return live, change.message


def next_value(live: Live, actor: str) -> str:
    """A default record value for one-click produce: the actor's name and a counter, e.g. A-3."""
    n = sum(1 for e in live.commands if "step" in e and isinstance(e["step"], dict) and f"{actor}.produce" in e["step"])
    return f"{actor}-{n + 1}"


# ---------------------------------------------------------------------------------------------- running
_RUNNERS: dict[str, Any] = {}


def run_delay_s() -> float:
    return float(getattr(settings, "PLAYGROUND_RUN_STEP_MS", 800)) / 1000.0


async def run_loop(session_id: str) -> None:
    """Applies the remaining scenario steps with a pause between them, until the end or "pause"."""
    import asyncio

    from channels.db import database_sync_to_async

    try:
        while True:
            started = time.monotonic()
            more = await database_sync_to_async(run_one)(session_id)
            if not more:
                break
            await asyncio.sleep(max(0.0, run_delay_s() - (time.monotonic() - started)))
    except CommandError as exc:
        log.info("session %s: run stopped: %s", session_id, exc)
        await database_sync_to_async(_stop_quietly)(session_id)
    except Exception:
        log.exception("session %s: run failed", session_id)
        await database_sync_to_async(_stop_quietly)(session_id)
    finally:
        _RUNNERS.pop(session_id, None)


def _stop_quietly(session_id: str) -> None:
    try:
        set_running(session_id, False)
    except Exception:  # noqa: BLE001
        log.exception("session %s: could not clear running", session_id)


def ensure_runner(session_id: str) -> None:
    """Start this process's runner for the session unless one is going (call from the event loop)."""
    import asyncio

    task = _RUNNERS.get(session_id)
    if task is not None and not task.done():
        return
    _RUNNERS[session_id] = asyncio.get_running_loop().create_task(run_loop(session_id))
