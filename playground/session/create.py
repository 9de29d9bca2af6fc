"""New sessions: from a scenario (or free play), and forks of another session at a step.

A fork's log is a copy of the first k commands of the original, and it says where it came from. On the simulator
the copy is one INSERT ... SELECT and the new session starts from the original's nearest checkpoint, so a fork at
step 10,000 costs no more than a scrub there. Forking a real-cluster session onto the simulator replays the
commands there (the simulator's own outcomes are stored); "on fresh topics" runs them again on the cluster.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from playground.engine.spec import DEFAULT_PROFILE, Profile
from playground.models import ScenarioText, Session, normalise_text, text_id
from playground.session import capability, checkpoints, limits, store
from playground.session.backends import kafka_configured, live_only, not_configured
from playground.session.cache import CACHE
from playground.session.live import CommandError, Live
from playground.session.realcluster import run_again
from playground.session.replay import _close, catch_up, fresh, restore

BACKENDS = ("sim", "kafka")


def client_key(address: str | None) -> str:
    secret = settings.SECRET_KEY.encode()
    return hmac.new(secret, (address or "?").encode(), hashlib.sha256).hexdigest()[:32]


def _is_library_text(scenario: Any, text: str) -> bool:
    from playground.scenario import library

    shipped = library.get(scenario.id) if scenario is not None else None
    return shipped is not None and normalise_text(shipped.source) == normalise_text(text)


def _new_text_allowed(text: str, client: str, library_text: bool = False) -> list[str]:
    """A scenario text about to be stored: when it is new (the same text is stored once, under its content's
    address) and not one of the library's, it counts against the client's and the server's quotas. The buckets
    taken, to give back when nothing is stored after all."""
    if library_text or ScenarioText.objects.filter(pk=text_id(text)).exists():
        return []
    taken = []
    try:
        if client:
            taken.append(limits.take("texts_per_hour", client))
        taken.append(limits.take("texts_per_hour_server"))
    except limits.LimitExceeded:
        for bucket in taken:
            limits.give_back(bucket)
        raise
    return taken


def keep_text(text: str, scenario_id: str, *, client: str, shared: bool = False) -> ScenarioText:
    """Store a scenario text ("Save and share"), within the quotas on new texts."""
    taken = _new_text_allowed(text, client)
    try:
        return ScenarioText.store(text, scenario_id, shared=shared)
    except BaseException:
        for bucket in taken:
            limits.give_back(bucket)
        raise


def _give_back(buckets: list[str | None]) -> None:
    for bucket in buckets:
        if bucket:
            limits.give_back(bucket)


def _with_key(row: Session, key_of: Callable[[str], str] | None = None) -> Session:
    """Give the new session a drive capability (new, or derived from the session's id by `key_of`: a room's seat);
    the secret rides on the row object (never stored) for the view to hand to the creator's browser."""
    key = key_of(row.id) if key_of is not None else capability.new_key()
    row.drive_key = capability.digest(key)
    row.drive_secret = key
    return row


def create(
    scenario: Any | None,
    *,
    source: str = "",
    backend: str = "sim",
    seed: int | None = None,
    client: str = "",
    key: Callable[[str], str] | None = None,
    profile: Profile | None = None,
    stored: ScenarioText | None = None,
) -> Session:
    """A new session for a scenario (with the exact text it was loaded from) or free play (scenario None), in
    `profile` (default: the scenario's own, else Kafka 3.9 with librdkafka). `client` is the creator's key.
    `stored`: the scenario's text, already stored and counted (a room's agenda item: one per attendee)."""
    taken: list[str | None] = [limits.sessions_per_minute(client)]
    try:
        return _create(scenario, source, backend, seed, client, key, profile, taken, stored)
    except BaseException:
        _give_back(taken)  # nothing was made: nothing is counted
        raise


def _create(
    scenario: Any | None,
    source: str,
    backend: str,
    seed: int | None,
    client: str,
    key: Callable[[str], str] | None,
    profile: Profile | None,
    taken: list[str | None],
    stored: ScenarioText | None = None,
) -> Session:
    profile = profile or (scenario.profile if scenario is not None else DEFAULT_PROFILE)
    text: ScenarioText | None = None
    if scenario is not None:
        row = Session(
            scenario_id=scenario.id, backend=backend, seed=scenario.seed if seed is None else seed, client_key=client
        )
        if stored is not None:
            row.source = stored
        else:
            body = normalise_text(source or scenario.source)
            taken += _new_text_allowed(body, client, _is_library_text(scenario, body))
            # Not stored yet: a scenario that does not build leaves nothing behind.
            text = ScenarioText(id=text_id(body), text=body, scenario_id=scenario.id)
            row.source = text
    else:
        row = Session(backend=backend, seed=seed or 0, client_key=client)
    row.profile = profile
    _with_key(row, key)
    # Build it once now: a scenario that fails to load or a backend that cannot start is the creator's error.
    live = fresh(row)
    try:
        with transaction.atomic():
            if text is not None:
                row.source = ScenarioText.store(text.text, text.scenario_id)
            row.save(force_insert=True)
    except Exception:
        _close(live)
        raise
    live.session_id, live.version = row.id, row.version
    CACHE.put(live)
    return row


def create_unclaimed(scenario: Any, *, stored: ScenarioText, profile: Profile | None, n: int) -> list[Session]:
    """`n` new simulator sessions of a stored scenario text at once, that nobody drives until `store.claim` gives
    each its drive capability: a room moving on makes every attendee's seat in one statement (each attendee's page
    then finds theirs, instead of each making one). The scenario is built once, as `create` builds each session it
    makes: a text that does not build makes none. Made in the caller's transaction."""
    rows = [
        Session(scenario_id=scenario.id, backend="sim", seed=scenario.seed, source=stored, drive_key="")
        for _ in range(n)
    ]
    for row in rows:
        row.profile = profile or scenario.profile
    if rows:
        _close(fresh(rows[0]))
    return list(Session.objects.bulk_create(rows))


def fork(session_id: str, at: int, *, backend: str | None = None, client: str = "") -> Session:
    """A new session whose log is this one's up to step `at` (live.py: the first `at` commands and what came with
    them), on `backend` (default: the same, except that a real-cluster session forks onto the simulator unless
    "kafka" is asked for: fresh topics)."""
    with CACHE.lock(session_id):
        origin = store.read(session_id)
        head = catch_up(origin)
    if not 0 <= at <= head.step_count:
        raise CommandError(
            _("Step %(k)s is not in this session: it has steps 0 to %(n)d.") % {"k": at, "n": head.step_count},
            status=404,
        )
    target = backend or ("sim" if live_only(origin.backend) else origin.backend)
    if target not in BACKENDS and target != origin.backend:
        raise CommandError(_("Unknown backend %(b)s.") % {"b": target})
    if target == "kafka" and not kafka_configured(origin.profile):
        raise CommandError(not_configured(origin.profile))
    taken = limits.sessions_per_minute(client)
    try:
        return _fork(head, origin, at, target, client)
    except BaseException:
        _give_back([taken])
        raise


def _fork(head: Live, origin: Session, at: int, target: str, client: str) -> Session:
    # a fork keeps the profile: the same Kafka and client, whichever backend it runs on
    row = _with_key(
        Session(
            scenario_id=origin.scenario_id,
            source_id=origin.source_id,
            backend=target,
            seed=origin.seed,
            kafka=origin.kafka,
            client=origin.client,
            forked_from=origin,
            forked_at=at,
            client_key=client,
        )
    )
    entries = head.entries_at(at)
    if target == origin.backend and not live_only(target):
        live = _copied(head, row, entries)
    else:
        live = _run_again(head, row, entries)
    live.origin = {"session": head.session_id, "at": at}
    live.session_id, live.version = row.id, row.version
    CACHE.put(live)
    return row


def _copied(head: Live, row: Session, at: int) -> Live:  # `at`: entries
    """Same backend, replayed by the simulator: copy the rows, start from the original's nearest checkpoint."""
    row.length = at
    with transaction.atomic():
        row.save(force_insert=True)
        store.copy_prefix(head.session_id, row.id, at)
        checkpoints.copy_for_fork(head.session_id, row.id, at)
    live = restore(head, at)
    live.row_ids = store.row_ids(row.id)
    return live


def _run_again(head: Live, row: Session, at: int) -> Live:  # `at`: entries
    """Another backend (a real cluster's log onto the simulator, or onto fresh topics): run the commands there."""
    live = fresh(row)
    entries = run_again(
        live, [{k: v for k, v in e.items() if k not in ("outcome", "fenced")} for e in head.commands[:at]]
    )
    with transaction.atomic():
        row.save(force_insert=True)
        ids = store.append(row, entries)
    assert ids is not None  # a row nobody else knows yet cannot have moved
    row.version, row.length = row.version + 1, len(entries)
    for entry, row_id in zip(entries, ids):
        live.record(entry, row_id)
    return live
