"""Adding actors to a running session (free play's "+ producer", "+ consumer"): names, configuration, limits."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from django.utils.translation import gettext as _

from playground.engine.spec import CONSUMER, PRODUCER, ActorSpec
from playground.session import limits
from playground.session.commands import Change, commit
from playground.session.live import NAME_RE, CommandError, Live, actor_to_entry, run_entry


def _free_name(live: Live, candidates: Iterable[str]) -> str:
    for name in candidates:
        if name not in live.actors:
            return name
    raise CommandError(_("No free actor name."))


def _producer_names() -> Iterator[str]:
    letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    yield from letters
    for i in range(2, 1000):
        yield from (f"{c}{i}" for c in letters)


def _check_name(value: str, message: str) -> None:
    if len(value) > limits.limit("name_chars") or not NAME_RE.match(value):
        raise CommandError(message % {"n": limits.limit("name_chars")})


def _added(live: Live, spec: ActorSpec) -> Change:
    entry = run_entry(live, {"add": actor_to_entry(spec)})
    return Change(append=[entry], message=spec.name)


def add_producer(session_id: str, mode: str, transactional_id: str | None = None) -> tuple[Live, str]:
    """ "share" an existing transactional id, take a "new" one, or a "plain" (idempotent, not transactional) one."""

    def mutate(live: Live) -> Change:
        limits.check_producers(len(live.producers()) + 1)
        limits.check_commands(live.length + 1)
        config: dict[str, Any]
        if mode == "share":
            if transactional_id not in live.transactional_ids():
                raise CommandError(_("No producer uses transactional id %(t)s yet.") % {"t": transactional_id})
            config = {"transactional.id": transactional_id}
        elif mode == "new":
            if transactional_id:
                _check_name(
                    transactional_id, _("A transactional id is letters, digits, '.', '_' or '-' (at most %(n)d).")
                )
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
        # As the scenario loader does: a producer is idempotent unless it says otherwise (librdkafka's own default
        # is not), so "plain" means idempotent, not transactional, on both backends.
        config.setdefault("enable.idempotence", True)
        return _added(live, ActorSpec(name=_free_name(live, _producer_names()), kind=PRODUCER, config=config))

    live, change = commit(session_id, mutate)
    return live, change.message


def add_consumer(session_id: str, isolation: str, group: str | None = None) -> tuple[Live, str]:
    def mutate(live: Live) -> Change:
        if isolation not in ("read_committed", "read_uncommitted"):
            raise CommandError(_("Isolation level is read_committed or read_uncommitted."))
        if group:
            _check_name(group, _("A group id is letters, digits, '.', '_' or '-' (at most %(n)d)."))
        limits.check_consumers(len(live.consumers()) + 1)
        limits.check_commands(live.length + 1)
        prefix = "g" if group else ("rc" if isolation == "read_committed" else "ru")
        config: dict[str, Any] = {"isolation.level": isolation}
        if group:
            config["group.id"] = group
        topics = tuple(t.name for t in live.cluster.topics)
        name = _free_name(live, (f"{prefix}{i}" for i in range(1, 1000)))
        return _added(live, ActorSpec(name=name, kind=CONSUMER, config=config, topics=topics))

    live, change = commit(session_id, mutate)
    return live, change.message
