"""Loading a scenario's steps: each action's arguments checked against its actor and the cluster, its `expect:`
(outcomes in every profile or per profile), durations and partitions; part of the loader (loader.py), whose errors
name the file, the line and the field."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import yaml

from playground.engine.spec import (
    APP,
    APP_ACTIONS,
    CLUSTER_ACTORS,
    CONSUMER,
    CONSUMER_ACTIONS,
    DEFAULT_PROFILE,
    NOTE,
    PRODUCER,
    PRODUCER_ACTIONS,
    ActorSpec,
    ClusterSpec,
    Step,
)
from playground.scenario.messages import _
from playground.scenario.model import (
    DEFAULT_LANG,
    DEFAULT_SELECTOR,
    MAX_CHOICES,
    MAX_STEPS,
    NAMED_PROFILES,
    OUTCOMES,
    PROFILE_SELECTORS,
    canonical_selector,
    for_profile,
    selectors_of,
)
from playground.scenario.reader import INT, Reader, did_you_mean, join_field, unknown_name

_DURATION = re.compile(r"^([0-9]+)\s*(ms|s|m|h)$")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_FUTURE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
# A step's `expect:` as written: its outcomes in every profile, or its outcomes per profile selector (kept aside in
# Reader.step_expects and resolved per run: a Step holds outcomes for one profile).
StepExpect = tuple[str, ...] | dict[str, tuple[str, ...]] | None


OUTCOME, ANSWER = "outcome", "answer"  # what _per_profile reads (its messages name it)

if TYPE_CHECKING:
    pass


def _unknown_argument(name: str, allowed: Any, takes: str) -> str:
    return _("unknown argument %(name)s%(hint)s; %(takes)s") % {
        "name": repr(name),
        "hint": did_you_mean(name, allowed),
        "takes": takes,
    }


def _out_of_range(partition: int, topic: str, partitions: int) -> str:
    return _("partition %(p)s is out of range: %(topic)s has %(n)s partition(s), 0..%(last)s") % {
        "p": partition,
        "topic": topic,
        "n": partitions,
        "last": partitions - 1,
    }


def _parse_steps(r: Reader, node: yaml.Node, cluster: ClusterSpec, actors: dict[str, ActorSpec]) -> tuple[Step, ...]:
    steps = []
    items = r.sequence(node, "steps")
    if not items:
        raise r.fail(node, "steps", _("a scenario has at least one step"))
    if len(items) > MAX_STEPS:
        raise r.fail(
            items[MAX_STEPS],
            "steps",
            _("at most %(max)s steps, found %(n)s") % {"max": f"{MAX_STEPS:,}", "n": f"{len(items):,}"},
        )
    for index, item in enumerate(items):
        step = r.attempt(_parse_step, r, item, index, cluster, actors)
        if step is not None:
            steps.append(step)
    return tuple(steps)


def _parse_step(
    r: Reader, item: yaml.Node, index: int, cluster: ClusterSpec, actors: dict[str, ActorSpec]
) -> Step | None:

    where = join_field("steps", index)
    line = item.start_mark.line + 1
    if isinstance(item, yaml.ScalarNode):
        label, label_node, args_node = r.string(item, where), item, None
    else:
        pairs = r.mapping(item, where)
        if len(pairs) != 1:
            raise r.fail(
                item,
                where,
                _("a step is one ACTOR.ACTION (with its arguments) or one note; found %(keys)s")
                % {"keys": ", ".join(pairs)},
            )
        label, (label_node, args_node) = next(iter(pairs.items()))

    if label == NOTE:
        if args_node is None:
            raise r.fail(item, where, _("a note needs its text: note: TEXT or note: {en: ..., zh: ...}"))
        if isinstance(args_node, yaml.ScalarNode) and args_node.style and args_node.value == "":
            # `note: ""`: a place for the author to write one (a session saved as a scenario has them); shows nothing
            return Step(actor=NOTE, action=NOTE, args={"text": {DEFAULT_LANG: ""}}, index=index, line=line)
        return Step(
            actor=NOTE, action=NOTE, args={"text": r.texts(args_node, join_field(where, NOTE))}, index=index, line=line
        )

    actor, dot, action = label.partition(".")
    if not dot or not actor or not action:
        raise r.fail(
            label_node,
            where,
            _("%(label)s is not ACTOR.ACTION (e.g. A.commit_transaction) or note") % {"label": repr(label)},
        )
    where = join_field(where, label)
    if actor == APP:
        if r.database is None:
            raise r.fail(
                label_node, where, _("app steps run SQL on the scenario's database: declare one under database:")
            )
        if action not in APP_ACTIONS:
            raise r.fail(
                label_node,
                where,
                unknown_name(
                    _("action"),
                    action,
                    APP_ACTIONS,
                    _("%(actor)s actions") % {"actor": APP},
                    _(" for %(actor)s") % {"actor": APP},
                ),
            )
        args, expect = _app_args(r, action, args_node, label_node, where)
        return Step(
            actor=actor, action=action, args=args, expect=_outcomes_of(r, index, expect), index=index, line=line
        )
    if actor in CLUSTER_ACTORS:
        if action not in CLUSTER_ACTORS[actor]:
            raise r.fail(
                label_node,
                where,
                unknown_name(
                    _("action"),
                    action,
                    CLUSTER_ACTORS[actor],
                    _("%(actor)s actions") % {"actor": actor},
                    _(" for %(actor)s") % {"actor": actor},
                ),
            )
        args, expect, predict = _cluster_args(r, actor, action, args_node, label_node, where, cluster, actors)
        return Step(
            actor=actor,
            action=action,
            args=args,
            expect=_outcomes_of(r, index, expect),
            index=index,
            line=line,
            predict=predict,
        )
    spec = actors.get(actor)
    if spec is None:
        raise r.fail(label_node, where, unknown_name(_("actor"), actor, actors))
    if spec.kind == "broken":  # its declaration has an error of its own: its steps cannot be checked
        return None
    known = PRODUCER_ACTIONS if spec.kind == PRODUCER else CONSUMER_ACTIONS
    if action not in known:
        raise r.fail(
            label_node,
            where,
            unknown_name(
                _("action"),
                action,
                known,
                _("producer actions") if spec.kind == PRODUCER else _("consumer actions"),
                (_(" for producer %(name)s") if spec.kind == PRODUCER else _(" for consumer %(name)s"))
                % {"name": repr(actor)},
            ),
        )
    if actor in r.broken:
        return None
    if action == "get":
        return _get_step(r, actor, args_node, label_node, where, index, line)
    raw = r.mapping(args_node, where, allow_null=True) if args_node is not None else {}
    expect = _step_expect(r, raw.pop("expect", None), where)
    predict = _predict(r, raw.pop("predict", None), where)
    args = _actor_args(r, spec, action, raw, args_node or label_node, where, cluster, actors)
    return Step(
        actor=actor,
        action=action,
        args=args,
        expect=_outcomes_of(r, index, expect),
        index=index,
        line=line,
        predict=predict,
    )


def _get_step(
    r: Reader, actor: str, node: yaml.Node | None, label_node: yaml.Node, where: str, index: int, line: int
) -> Step:
    """`A.get: f3` (or `{future: f3, expect: ...}`): wait for the send whose future an earlier `A.produce` named."""
    named = r.futures.get(actor, {})
    usage = _("missing: %(actor)s.get needs the future an earlier %(actor)s.produce named (future: NAME)") % {
        "actor": actor
    }
    if node is None or r.is_null(node):
        raise r.fail(label_node, where, usage)
    expect: StepExpect = None
    predict = None
    value_node = node
    if isinstance(node, yaml.MappingNode):
        raw = r.mapping(node, where)
        expect = _step_expect(r, raw.pop("expect", None), where)
        predict = _predict(r, raw.pop("predict", None), where)
        for key, (key_node, _v) in raw.items():
            if key != "future":
                raise r.fail(
                    key_node,
                    join_field(where, key),
                    _("unknown argument %(name)s; get takes future and expect") % {"name": repr(key)},
                )
        if "future" not in raw:
            raise r.fail(node, join_field(where, "future"), usage)
        value_node = raw["future"][1]
    name = r.string(value_node, join_field(where, "future") if value_node is not node else where)
    if name not in named:
        raise r.fail(
            value_node,
            where,
            unknown_name(
                _("future"), name, named, _("futures %(actor)s's produce steps named before") % {"actor": actor}
            ),
        )
    return Step(
        actor=actor,
        action="get",
        args={"future": name},
        expect=_outcomes_of(r, index, expect),
        index=index,
        line=line,
        predict=predict,
    )


def _outcomes_of(r: Reader, index: int, expect: StepExpect) -> tuple[str, ...] | None:
    """The step's outcomes as its Step holds them; outcomes per profile are kept aside, resolved per run."""
    if isinstance(expect, dict):
        r.step_expects[index] = expect
        return None
    return expect


def _step_expect(r: Reader, pair: tuple[yaml.Node, yaml.Node] | None, where: str) -> StepExpect:
    """A step's `expect:`: one outcome or a list of them (every profile), or a mapping from profile selectors to
    those (`{librdkafka: _FENCED, java: ProducerFencedException}`), which must name an outcome for every profile
    (`default:` for those no other key names)."""
    if pair is None:
        return None
    _key, node = pair
    at = join_field(where, "expect")
    if not isinstance(node, yaml.MappingNode):
        return _outcomes(r, node, at)

    def read(value_node: yaml.Node, key_at: str, selector: str) -> tuple[str, ...]:
        outcomes = _outcomes(r, value_node, key_at)
        client = selector.rpartition("-")[2].partition(":")[0]
        for n, written in zip(_outcome_nodes(r, value_node, key_at), outcomes):
            name = written.partition(": ")[0]
            if client == "java" and name.startswith("_"):
                raise r.fail(
                    n,
                    key_at,
                    _(
                        "%(name)s is a librdkafka outcome: the Java client's outcomes are ok, an exception's simple "
                        "class name such as ProducerFencedException, or a broker error"
                    )
                    % {"name": repr(name)},
                )
            if client == "librdkafka" and name.endswith("Exception"):
                raise r.fail(
                    n,
                    key_at,
                    _(
                        "%(name)s is a Java exception: librdkafka's outcomes are ok, a local error such as _FENCED, "
                        "or a broker error"
                    )
                    % {"name": repr(name)},
                )
        return outcomes

    return _per_profile(r, node, at, read, OUTCOME, "{librdkafka: _FENCED, java: ProducerFencedException}")


def _outcome_nodes(r: Reader, node: yaml.Node, at: str) -> list[yaml.Node]:
    nodes = r.sequence(node, at) if isinstance(node, yaml.SequenceNode) else [node]
    if not nodes:
        raise r.fail(node, at, _("name at least one outcome"))
    return nodes


def _outcomes(r: Reader, node: yaml.Node, at: str) -> tuple[str, ...]:
    """Outcome names; `NAME: text` also asks for `text` in the exception's (or error's) message."""
    names = []
    for n in _outcome_nodes(r, node, at):
        name = r.string(n, at)
        outcome, colon, text = name.partition(": ")
        if outcome not in OUTCOMES:
            raise r.fail(n, at, _outcome_message(outcome))
        if colon and not text.strip():
            raise r.fail(
                n,
                at,
                _("%(name)s: name the text the message must contain after '%(outcome)s: '")
                % {"name": repr(name), "outcome": outcome},
            )
        names.append(name)
    return tuple(names)


def _outcome_message(name: str) -> str:
    return _(
        "unknown outcome %(name)s%(hint)s: use ok, a librdkafka error such as _FENCED, _STATE, "
        "_FATAL, a broker error such as INVALID_PRODUCER_EPOCH, or a Java exception such as ProducerFencedException"
    ) % {"name": repr(name), "hint": did_you_mean(name, OUTCOMES)}


# send_offsets_to_transaction's `first:` (the Java client model): the application's AddOffsetsToTxn queued before the
# Sender's AddPartitionsToTxn (the default), or after it
FIRST_REQUESTS = ("AddOffsetsToTxn", "AddPartitionsToTxn")

# Arguments per action: name -> kind. Kinds: "topic", "partition", "text", "bool", "consumer", "count",
# "future", "request".
_ACTOR_ARGS: dict[tuple[str, str], dict[str, str]] = {
    (PRODUCER, "produce"): {
        "topic": "topic",
        "partition": "partition",
        "key": "text",
        "value": "text",
        "await": "bool",
        "from": "consumer",
        "future": "future",
        "callback": "bool",
    },
    # first: which request kafka-clients queues first when the application's AddOffsetsToTxn and the Sender's
    # AddPartitionsToTxn race (issue 31 item 6)
    (PRODUCER, "send_offsets_to_transaction"): {"consumer": "consumer", "first": "request"},
    (CONSUMER, "poll"): {"max": "count"},
}


def _actor_args(
    r: Reader,
    spec: ActorSpec,
    action: str,
    raw: dict[str, tuple[yaml.Node, yaml.Node]],
    node: yaml.Node,
    where: str,
    cluster: ClusterSpec,
    actors: dict[str, ActorSpec],
) -> dict[str, Any]:
    schema = _ACTOR_ARGS.get((spec.kind, action), {})
    args: dict[str, Any] = {}
    for name, (key_node, value_node) in raw.items():
        at = join_field(where, name)
        kind = schema.get(name)
        if kind is None:
            takes = (
                _("%(action)s takes %(args)s and expect") % {"action": action, "args": ", ".join(schema)}
                if schema
                else _("%(action)s takes no argument but expect") % {"action": action}
            )
            raise r.fail(key_node, at, _unknown_argument(name, schema, takes))
        if kind == "text":
            args[name] = r.string(value_node, at, non_empty=False)
        elif kind == "bool":
            args[name] = r.boolean(value_node, at)
        elif kind == "count":
            args[name] = r.integer(value_node, at, 1)
        elif kind == "topic":
            topic = r.string(value_node, at)
            if cluster.topic(topic) is None:
                raise r.fail(
                    value_node,
                    at,
                    unknown_name(_("topic"), topic, (t.name for t in cluster.topics))
                    + _("; declare it under cluster.topics"),
                )
            args[name] = topic
        elif kind == "consumer":
            other = r.string(value_node, at)
            target = actors.get(other)
            consumers = [a.name for a in actors.values() if a.kind == CONSUMER]
            if target is None or target.kind != CONSUMER:
                raise r.fail(value_node, at, unknown_name(_("consumer"), other, consumers))
            if name == "consumer" and not target.group_id:
                raise r.fail(
                    value_node,
                    at,
                    _("consumer %(name)s has no group.id: send_offsets_to_transaction needs the consumer's group")
                    % {"name": repr(other)},
                )
            args[name] = other
        elif kind == "partition":
            args[name] = r.integer(value_node, at, 0)
        elif kind == "request":
            request = r.string(value_node, at)
            if request not in FIRST_REQUESTS:
                raise r.fail(value_node, at, unknown_name(_("request"), request, FIRST_REQUESTS))
            args[name] = request
        elif kind == "future":
            future = r.string(value_node, at)
            if not _FUTURE_NAME.match(future):
                raise r.fail(
                    value_node,
                    at,
                    _("%(name)s is not a future's name (a letter, then letters, digits, '_' or '-')")
                    % {"name": repr(future)},
                )
            args[name] = future
    if spec.kind == PRODUCER and action == "produce" and "future" in args:
        # a send whose future the application keeps and waits for later (`A.get: NAME`)
        waits = [k for k in ("await", "from") if k in args]
        if waits:
            raise r.fail(
                raw[waits[0]][0],
                join_field(where, waits[0]),
                _(
                    "with future: the send is waited for by a later %(actor)s.get (one record, not awaited here); "
                    "remove %(key)s"
                )
                % {"actor": spec.name, "key": waits[0]},
            )
        earlier = r.futures.setdefault(spec.name, {})
        if args["future"] in earlier:
            raise r.fail(
                raw["future"][1],
                join_field(where, "future"),
                _("future %(name)s is already named at line %(line)s")
                % {"name": repr(args["future"]), "line": earlier[args["future"]]},
            )
        earlier[args["future"]] = raw["future"][1].start_mark.line + 1
    if spec.kind == PRODUCER and action == "produce":
        declared = cluster.topic(args["topic"]) if "topic" in args else None
        if declared is None:  # a topic argument names a declared topic (checked above)
            raise r.fail(node, join_field(where, "topic"), _("missing: produce needs a topic"))
        if "partition" in args and args["partition"] >= declared.partitions:
            raise r.fail(
                raw["partition"][1],
                join_field(where, "partition"),
                _out_of_range(args["partition"], declared.name, declared.partitions),
            )
        if "from" in args:
            clash = [k for k in ("key", "value", "partition") if k in args]
            if clash:
                raise r.fail(
                    raw[clash[0]][0],
                    join_field(where, clash[0]),
                    _("with from: the records keep the consumed key, value and partition number; remove it"),
                )
        elif "value" not in args:
            raise r.fail(node, join_field(where, "value"), _("missing: produce needs a value (or from: CONSUMER)"))
    if spec.kind == PRODUCER and action == "send_offsets_to_transaction" and "consumer" not in args:
        raise r.fail(node, join_field(where, "consumer"), _("missing: whose offsets? consumer: NAME"))
    return args


def _cluster_args(
    r: Reader,
    actor: str,
    action: str,
    node: yaml.Node | None,
    label_node: yaml.Node,
    where: str,
    cluster: ClusterSpec,
    actors: dict[str, ActorSpec],
) -> tuple[dict[str, Any], StepExpect, dict[str, Any] | None]:
    """`clock.advance: 61s` -> {"ms": 61000}; `broker.stop: 2` -> {"broker": 2}. Extensions for `broker.stop`:
    `{coordinator_of: my-txn}` and `{leader_of: orders-0}`, which name a role instead of a broker id (placement
    differs between the simulator and a real cluster). The mapping forms `{ms: 61000}` / `{broker: 2}` are what
    Step.to_dict writes back, so a session's command log loads again."""
    label = label_node.value
    if actor == "net":
        return _late_write_args(r, node, label_node, where, actors)
    if action == "abort_transaction":
        return _abort_args(r, node, label_node, where, cluster)
    if node is None:
        what = (
            _("a duration such as 61s, 500ms or 2m")
            if actor == "clock"
            else _("a broker id, 1..%(n)s") % {"n": cluster.brokers}
        )
        raise r.fail(label_node, where, _("missing: %(label)s needs %(what)s") % {"label": label, "what": what})
    scalar_form = isinstance(node, yaml.ScalarNode)
    if scalar_form:
        raw, expect, predict = {("ms" if actor == "clock" else "broker"): (label_node, node)}, None, None
    else:
        raw = r.mapping(node, where)
        expect = _step_expect(r, raw.pop("expect", None), where)
        predict = _predict(r, raw.pop("predict", None), where)
    allowed = (
        ("ms",) if actor == "clock" else ("broker", "coordinator_of", "leader_of") if action == "stop" else ("broker",)
    )
    args: dict[str, Any] = {}
    for name, (key_node, value_node) in raw.items():
        at = where if scalar_form else join_field(where, name)
        if name not in allowed:
            raise r.fail(
                key_node,
                at,
                _unknown_argument(
                    name,
                    allowed,
                    _("%(action)s takes %(args)s and expect") % {"action": label, "args": _(" or ").join(allowed)},
                ),
            )
        if name == "ms":
            args["ms"] = _duration(r, value_node, at, bare_number_ok=not scalar_form)
        elif name == "broker":
            args["broker"] = r.integer(value_node, at, 1)
            if args["broker"] > cluster.brokers:
                raise r.fail(
                    value_node,
                    at,
                    _("broker %(id)s is out of range: the cluster has brokers 1..%(n)s")
                    % {"id": args["broker"], "n": cluster.brokers},
                )
        elif name == "coordinator_of":
            txid = r.string(value_node, at)
            declared = sorted({a.transactional_id for a in actors.values() if a.transactional_id})
            if txid not in declared:
                raise r.fail(value_node, at, unknown_name("transactional.id", txid, declared, _("declared")))
            args[name] = txid
        else:  # leader_of
            args[name] = _parse_tp(r, value_node, at, cluster)
    if len(args) != 1:
        raise r.fail(
            node,
            where,
            _("%(action)s takes exactly one of %(args)s") % {"action": label, "args": _(" or ").join(allowed)},
        )
    return args, expect, predict


def _abort_args(
    r: Reader, node: yaml.Node | None, label_node: yaml.Node, where: str, cluster: ClusterSpec
) -> tuple[dict[str, Any], StepExpect, dict[str, Any] | None]:
    """`broker.abort_transaction: payments-0` or `{partition: payments-0}`: an operator aborts the transaction open on
    that partition that started first (`kafka-transactions.sh abort --start-offset`, playground/sim/adminabort.py)."""
    if node is None:
        raise r.fail(label_node, where, _("missing: broker.abort_transaction needs the partition, e.g. payments-0"))
    if isinstance(node, yaml.ScalarNode):
        return {"partition": _parse_tp(r, node, where, cluster)}, None, None
    raw = r.mapping(node, where)
    expect = _step_expect(r, raw.pop("expect", None), where)
    predict = _predict(r, raw.pop("predict", None), where)
    for name, (key_node, _value_node) in raw.items():
        if name != "partition":
            raise r.fail(
                key_node,
                join_field(where, name),
                _("unknown argument %(name)s; broker.abort_transaction takes partition and expect")
                % {"name": repr(name)},
            )
    if "partition" not in raw:
        raise r.fail(node, join_field(where, "partition"), _("missing: which partition? partition: TOPIC-PARTITION"))
    return {"partition": _parse_tp(r, raw["partition"][1], join_field(where, "partition"), cluster)}, expect, predict


def _late_write_args(
    r: Reader, node: yaml.Node | None, label_node: yaml.Node, where: str, actors: dict[str, ActorSpec]
) -> tuple[dict[str, Any], StepExpect, dict[str, Any] | None]:
    """`net.late_write: {actor: P, of: a-1, value: a-2}` (key: optional): a Produce request of P's earlier
    transaction, held back by the network, reaches the leader now. `of` names a record P wrote in that transaction:
    the late batch carries its producer id and epoch, goes to its partition, with P's transactional.id."""
    usage = _("missing: net.late_write needs {actor: PRODUCER, of: EARLIER-RECORD-VALUE, value: VALUE} (key: optional)")
    if node is None:
        raise r.fail(label_node, where, usage)
    raw = r.mapping(node, where)
    expect = _step_expect(r, raw.pop("expect", None), where)
    predict = _predict(r, raw.pop("predict", None), where)
    allowed = ("actor", "of", "value", "key")
    args: dict[str, Any] = {}
    for name, (key_node, value_node) in raw.items():
        at = join_field(where, name)
        if name not in allowed:
            raise r.fail(
                key_node,
                at,
                _unknown_argument(
                    name,
                    allowed,
                    _("%(action)s takes %(args)s and expect")
                    % {"action": "net.late_write", "args": ", ".join(allowed)},
                ),
            )
        if name == "actor":
            who = r.string(value_node, at)
            producers = [a.name for a in actors.values() if a.kind == PRODUCER and a.transactional_id]
            if who not in producers:
                raise r.fail(value_node, at, unknown_name(_("transactional producer"), who, producers))
            args[name] = who
        else:
            args[name] = r.string(value_node, at, non_empty=name != "key")
    for name in ("actor", "of", "value"):
        if name not in args:
            raise r.fail(node, join_field(where, name), usage)
    return args, expect, predict


def _duration(r: Reader, node: yaml.Node, where: str, bare_number_ok: bool) -> int:
    """`61s`, `500ms`, `2m`, `1h` -> milliseconds. A bare number is ambiguous (seconds? ms?) except in the
    mapping form `{ms: N}`, which names its unit."""
    if bare_number_ok and isinstance(node, yaml.ScalarNode) and INT.match(node.value):
        return r.integer(node, where, 1)
    text = node.value.strip() if isinstance(node, yaml.ScalarNode) else None
    match = _DURATION.match(text or "")
    if match and len(match.group(1).lstrip("0")) > 12:  # more than 30 years in ms: past any clock.advance bound
        raise r.fail(node, where, _("%(text)s... is longer than any clock may advance") % {"text": match.group(0)[:24]})
    if not match or int(match.group(1)) <= 0:
        raise r.fail(
            node, where, _("expected a positive duration such as 61s, 500ms or 2m, got %(x)s") % {"x": r.describe(node)}
        )
    return int(match.group(1)) * _DURATION_MS[match.group(2)]


def _parse_tp(
    r: Reader, key_node: yaml.Node, where: str, cluster: ClusterSpec, topics: tuple[str, ...] | None = None
) -> str:
    """`orders-0`: a declared topic and a partition in range (topic names may contain dashes: split at the last)."""
    name = r.string(key_node, where)
    topic, dash, number = name.rpartition("-")
    if not dash or not (number.isascii() and number.isdigit()) or len(number) > 9:
        raise r.fail(key_node, where, _("%(name)s is not TOPIC-PARTITION (e.g. orders-0)") % {"name": repr(name)})
    spec = cluster.topic(topic)
    if spec is None:
        raise r.fail(key_node, where, unknown_name(_("topic"), topic, (t.name for t in cluster.topics)))
    if int(number) >= spec.partitions:
        raise r.fail(key_node, where, _out_of_range(int(number), topic, spec.partitions))
    if topics is not None and topic not in topics:
        raise r.fail(
            key_node,
            where,
            _("this consumer reads %(topics)s, not %(topic)s") % {"topics": ", ".join(topics), "topic": topic},
        )
    return f"{topic}-{int(number)}"


def _predict(r: Reader, pair: tuple[yaml.Node, yaml.Node] | None, where: str) -> dict[str, Any] | None:
    """`predict: {question: ..., choices: [...], answer: N}`: a multiple-choice question answered before the step
    runs; `answer` is the index of the right choice (from 0)."""
    if pair is None:
        return None
    _key, node = pair
    at = join_field(where, "predict")
    pairs = r.mapping(node, at)
    for key, (key_node, _v) in pairs.items():
        if key not in ("question", "choices", "answer"):
            raise r.fail(key_node, join_field(at, key), unknown_name(_("key"), key, ("question", "choices", "answer")))
    for key in ("question", "choices", "answer"):
        if key not in pairs:
            raise r.fail(
                node, join_field(at, key), _("missing (a prediction has a question, its choices and the answer)")
            )
    question = r.texts(pairs["question"][1], join_field(at, "question"))
    items = r.sequence(pairs["choices"][1], join_field(at, "choices"))
    if not 2 <= len(items) <= MAX_CHOICES:
        raise r.fail(
            pairs["choices"][1],
            join_field(at, "choices"),
            _("give 2 to %(max)s choices, found %(n)s") % {"max": MAX_CHOICES, "n": len(items)},
        )
    choices = [r.texts(item, join_field(join_field(at, "choices"), i)) for i, item in enumerate(items)]
    answer_node = pairs["answer"][1]
    if not isinstance(answer_node, yaml.MappingNode):
        return {
            "question": question,
            "choices": choices,
            "answer": r.integer(answer_node, join_field(at, "answer"), 0, len(choices) - 1),
        }
    # the right choice per profile (`answer: {librdkafka: 1, java: 2}`), as a step's outcomes per profile are given;
    # Scenario.resolved() sets "answer" for the profile a session runs
    answers = _per_profile(
        r,
        answer_node,
        join_field(at, "answer"),
        lambda n, where, _selector: r.integer(n, where, 0, len(choices) - 1),
        ANSWER,
        "{librdkafka: 1, java: 2}",
    )
    return {
        "question": question,
        "choices": choices,
        "answer": for_profile(answers, DEFAULT_PROFILE),
        "answers": answers,
    }


def _per_profile(r: Reader, node: yaml.Node, at: str, read: Any, what: str, example: str) -> dict[str, Any]:
    """A mapping from profile selectors (and `default`) to what `read(node, field, selector)` reads, naming every
    profile. `what`: OUTCOME or ANSWER."""
    pairs = r.mapping(node, at)
    if not pairs:
        message = (
            _("name the outcomes per profile, e.g. %(example)s")
            if what == OUTCOME
            else _("name the answers per profile, e.g. %(example)s")
        )
        raise r.fail(node, at, message % {"example": example})
    allowed = (*PROFILE_SELECTORS, DEFAULT_SELECTOR)
    by_selector: dict[str, Any] = {}
    for written, (key_node, value_node) in pairs.items():
        key_at = join_field(at, written)
        selector = canonical_selector(written)
        if selector not in allowed:
            raise r.fail(
                key_node,
                key_at,
                unknown_name(
                    _("profile key"),
                    selector,
                    allowed,
                    _("keys: a profile, a client release, a client, a Kafka version or default"),
                ),
            )
        by_selector[selector] = read(value_node, key_at, selector)
    if DEFAULT_SELECTOR not in by_selector:
        for profile in NAMED_PROFILES:
            names = selectors_of(profile)
            if not any(s in by_selector for s in names):
                # a client of the cluster's own release is most simply named without its release
                offered = [s for s in reversed(names) if s != f"{profile.client}:{profile.kafka}"]
                raise r.fail(
                    node,
                    at,
                    (
                        _(
                            "no outcome for profile %(profile)s: add %(keys)s or %(default)s (outcomes per profile "
                            "name every profile)"
                        )
                        if what == OUTCOME
                        else _(
                            "no answer for profile %(profile)s: add %(keys)s or %(default)s (answers per profile "
                            "name every profile)"
                        )
                    )
                    % {"profile": names[0], "keys": ", ".join(offered), "default": DEFAULT_SELECTOR},
                )
    return by_selector


def _app_args(
    r: Reader, action: str, node: yaml.Node | None, label_node: yaml.Node, where: str
) -> tuple[dict[str, Any], StepExpect]:
    """`app.sql: "UPDATE ..."` (or `{sql: ..., expect: ...}`); the other app actions take only `expect`."""
    if node is None or r.is_null(node):
        if action == "sql":
            raise r.fail(
                label_node,
                where,
                _(
                    "missing: app.sql needs its statement, e.g. app.sql: \"UPDATE orders SET status = 'paid' WHERE id = 1\""
                ),
            )
        return {}, None
    if isinstance(node, yaml.ScalarNode):
        if action != "sql":
            raise r.fail(node, where, _("app.%(action)s takes no argument (only expect)") % {"action": action})
        return {"sql": r.string(node, where)}, None
    raw = r.mapping(node, where)
    expect = _step_expect(r, raw.pop("expect", None), where)
    args: dict[str, Any] = {}
    for key, (key_node, value_node) in raw.items():
        if key != "sql" or action != "sql":
            raise r.fail(
                key_node,
                join_field(where, key),
                (
                    _("unknown argument %(name)s; app.%(action)s takes sql and expect")
                    if action == "sql"
                    else _("unknown argument %(name)s; app.%(action)s takes expect")
                )
                % {"name": repr(key), "action": action},
            )
        args["sql"] = r.string(value_node, join_field(where, key))
    if action == "sql" and "sql" not in args:
        raise r.fail(node, where, _("missing: sql"))
    return args, expect
