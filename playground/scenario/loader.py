"""Loading and validating scenario files (format 1). Every error names the file, the line and the field; one pass
finds every bad line. The YAML underneath is read by playground/scenario/reader.py (nodes only, each with its line).
This module reads a file's top level (its id, profile, cluster, actors, expectations); a step is read by loadsteps.py,
the `database:` block by loaddb.py.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from playground.engine.spec import (
    APP,
    CLIENT_KEYS,
    CLUSTER_ACTORS,
    CONSUMER,
    DEFAULT_PROFILE,
    KAFKA_RELEASES,
    NOTE,
    PRODUCER,
    ActorSpec,
    ClusterSpec,
    Profile,
    Step,
    TopicSpec,
    parse_client,
)
from playground.scenario.loaddb import _parse_database
from playground.scenario.loadsteps import _outcomes, _parse_steps, _parse_tp
from playground.scenario.messages import _
from playground.scenario.model import (
    BY_PROFILE,
    CLIENT_STATES,
    CLUSTER_CONFIG,
    CONSUMER_CONFIG,
    EXPECT_KEYS,
    FORMAT,
    HEADER_NAME_CHARS,
    MAX_ACTORS,
    MAX_BROKERS,
    MAX_HINTS,
    MAX_PARTITIONS,
    MAX_PIPELINES,
    PIPELINE_BY,
    PRODUCER_CONFIG,
    PROFILE_KEYS,
    PROFILE_SELECTORS,
    REQUIRED_TOP_LEVEL,
    TOP_LEVEL_KEYS,
    TXN_STATES,
    Pipeline,
    Scenario,
    ScenarioError,
    canonical_selector,
    profile_problems,
)
from playground.scenario.reader import Reader, compose, join_field, unknown_name

if TYPE_CHECKING:
    pass

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_ACTOR_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_SIM_KEY = re.compile(r"^sim(?:\.[a-z0-9_-]+)+$")
SEED_MAX = 2**31 - 1  # a session's seed is stored as a 32-bit integer (and the Play form takes no more)
MAX_CLUSTER_PARTITIONS = 128  # all topics together

# --------------------------------------------------------------------------------------------------------------
# Loading


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(str(path), 0, "file", _("cannot read: %(e)s") % {"e": exc}) from None
    return parse_scenario(text, str(path))


def load_library(directory: str | Path) -> list[Scenario]:
    """Every `*.yaml` in `directory`, in file-name order (files are named `NN-slug.yaml`). Ids must be unique."""
    scenarios = [load_scenario(p) for p in sorted(Path(directory).glob("*.yaml"))]
    seen: dict[str, str] = {}
    for scenario in scenarios:
        if scenario.id in seen:
            raise ScenarioError(
                scenario.path,
                _line_of(scenario.source, "id"),
                "id",
                _("%(id)s is also the id of %(other)s") % {"id": repr(scenario.id), "other": seen[scenario.id]},
            )
        seen[scenario.id] = scenario.path
    return scenarios


def _line_of(source: str, key: str) -> int:
    for number, line in enumerate(source.splitlines(), 1):
        if line.startswith(f"{key}:"):
            return number
    return 1


def check_text(text: str, path: str = "<editor>") -> tuple[Scenario | None, list[ScenarioError]]:
    """The editor's check: the scenario, or every error found (first in the file first)."""
    try:
        return parse_scenario(text, path), []
    except ScenarioError as exc:
        return None, exc.errors


@functools.lru_cache(maxsize=128)
def parsed(text: str, path: str = "<scenario>") -> Scenario:
    """parse_scenario, once per text and name in a process (a Scenario is frozen: it is shared, never changed).
    Every session of a workshop's agenda item is built from the same text: 40 attendees opening it at once parsed
    it 80 times (the seat, then the session's backend), a tenth of what a move cost the servers."""
    return parse_scenario(text, path)


def parse_scenario(text: str, path: str = "<scenario>") -> Scenario:
    root = compose(text, path)
    reader = Reader(path)
    top = reader.mapping(root, "")
    for key, (key_node, _value_node) in top.items():
        if key not in TOP_LEVEL_KEYS:
            reader.errors.append(
                reader.fail(key_node, key, unknown_name(_("top-level key"), key, TOP_LEVEL_KEYS, _("keys")))
            )
    for key in REQUIRED_TOP_LEVEL:
        if key not in top:
            reader.errors.append(reader.fail(root, key, _("missing (required)")))

    def node(key: str) -> yaml.Node | None:
        return top[key][1] if key in top else None

    fmt = reader.attempt(_format, reader, node("format")) if "format" in top else None
    scenario_id = reader.attempt(_scenario_id, reader, node("id")) if "id" in top else None
    title = reader.attempt(reader.texts, node("title"), "title") if "title" in top else None
    summary = reader.attempt(reader.texts, node("summary"), "summary", default={}) if "summary" in top else {}
    tags = reader.attempt(_tags, reader, node("tags"), default=()) if "tags" in top else ()
    seed = reader.attempt(reader.integer, node("seed"), "seed", 0, SEED_MAX, default=0) if "seed" in top else 0
    profile = (
        reader.attempt(_profile, reader, node("profile"), default=DEFAULT_PROFILE)
        if "profile" in top
        else DEFAULT_PROFILE
    )
    cluster = reader.attempt(_parse_cluster, reader, node("cluster"))
    if cluster is None:  # the rest refers to its topics and brokers: an error there ends the check
        reader.raise_errors()
    database = reader.attempt(_parse_database, reader, node("database")) if "database" in top else None
    reader.database = database
    actors: dict[str, ActorSpec] = {}
    if "actors" in top:
        actors = reader.attempt(_parse_actors, reader, node("actors"), cluster, default={})
    steps: tuple[Step, ...] = ()
    if "steps" in top and (actors or "actors" not in top):
        steps = reader.attempt(_parse_steps, reader, node("steps"), cluster, actors, default=())
    expect, expect_lines, expect_profiles = (None, {}, {})
    if "expect" in top:
        expect, expect_lines = reader.attempt(
            _parse_expect, reader, node("expect"), cluster, actors, default=(None, {})
        )
        expect_profiles = (expect or {}).pop(BY_PROFILE, {})
    goal, goal_lines = (None, {})
    if "goal" in top:
        goal, goal_lines = reader.attempt(
            _parse_expect, reader, node("goal"), cluster, actors, "goal", default=(None, {})
        )
        if goal == {}:
            reader.errors.append(
                reader.fail(node("goal"), "goal", _("name at least one check (the same keys as expect:)"))
            )
    hints = reader.attempt(_hints, reader, node("hints"), default=()) if "hints" in top else ()
    pipelines = reader.attempt(_pipelines, reader, node("pipeline"), cluster, default=()) if "pipeline" in top else ()
    if actors and cluster is not None and not reader.errors:
        # settings the file's own profile refuses (a broker setting its Kafka lacks, a client's construction check)
        for problem in profile_problems(cluster, actors, profile):
            assert problem.params is not None  # a Text "%(at)s: %(problem)s" (profile_problems)
            at, message = problem.params["at"], problem.params["problem"]
            where = node("profile") if "profile" in top else node("cluster") or root
            reader.errors.append(
                reader.fail(
                    where, at, _("%(problem)s (profile %(profile)s)") % {"problem": message, "profile": profile.key}
                )
            )
    reader.raise_errors()
    # each was read, or an error was noted (a required key missing, a value wrong) and raise_errors raised it
    assert fmt is not None and scenario_id is not None and title is not None and cluster is not None
    scenario = Scenario(
        format=fmt,
        id=scenario_id,
        title=title,
        summary=summary,
        tags=tags,
        seed=seed,
        cluster=cluster,
        actors=actors,
        steps=steps,
        expect=expect,
        path=path,
        source=text,
        expect_lines=expect_lines,
        goal=goal,
        goal_lines=goal_lines,
        hints=hints,
        pipelines=pipelines,
        database=database,
        profile=profile,
        step_expects=reader.step_expects,
        expect_base=expect,
        expect_base_lines=expect_lines,
        expect_profiles=expect_profiles,
    )
    # steps, expect and expect_lines as the file's own profile sees them (outcomes per profile resolved)
    return scenario.resolved(profile) if scenario.per_profile else scenario


def _format(r: Reader, node: yaml.Node) -> int:
    fmt = r.integer(node, "format")
    if fmt != FORMAT:
        raise r.fail(
            node, "format", _("this playground reads format %(ours)s, not %(theirs)s") % {"ours": FORMAT, "theirs": fmt}
        )
    return fmt


def _scenario_id(r: Reader, node: yaml.Node) -> str:
    scenario_id = r.string(node, "id")
    if not _SLUG.match(scenario_id):
        raise r.fail(
            node, "id", _("%(id)s is not a slug (lower-case letters, digits and dashes)") % {"id": repr(scenario_id)}
        )
    return scenario_id


def _profile(r: Reader, node: yaml.Node) -> Profile:
    """`profile: {kafka: "3.5" | "3.9" | "4", client: librdkafka | java | java:3.5}`: which Kafka, which client and
    which kafka-clients release the story is told in (both keys optional; the default is what a file without
    `profile:` has always meant; `java` alone is kafka-clients of the cluster's own release)."""
    pairs = r.mapping(node, "profile", allow_null=True)
    for key, (key_node, _v) in pairs.items():
        if key not in PROFILE_KEYS:
            raise r.fail(key_node, join_field("profile", key), unknown_name(_("key"), key, PROFILE_KEYS))
    kafka, client = DEFAULT_PROFILE.kafka, DEFAULT_PROFILE.client_key
    if "kafka" in pairs:
        value_node = pairs["kafka"][1]
        kafka = r.string(value_node, "profile.kafka")
        if kafka not in KAFKA_RELEASES:
            versions = _(" or ").join(f"{v} (Kafka {release})" for v, release in KAFKA_RELEASES.items())
            raise r.fail(
                value_node,
                "profile.kafka",
                _("%(version)s is not a Kafka version of this playground: %(versions)s")
                % {"version": repr(kafka), "versions": versions},
            )
    client_node = pairs["client"][1] if "client" in pairs else node
    if "client" in pairs:
        client = r.string(client_node, "profile.client")
    try:
        return parse_client(client, kafka)
    except ValueError:
        raise r.fail(
            client_node,
            "profile.client",
            unknown_name(_("client"), client, CLIENT_KEYS)
            + _(" (java:RELEASE is kafka-clients of that Kafka version)"),
        ) from None


def _hints(r: Reader, node: yaml.Node) -> tuple[dict[str, str], ...]:
    items = r.sequence(node, "hints")
    if not items or len(items) > MAX_HINTS:
        raise r.fail(node, "hints", _("give 1 to %(n)s hints") % {"n": MAX_HINTS})
    return tuple(r.texts(item, join_field("hints", i)) for i, item in enumerate(items))


def _pipelines(r: Reader, node: yaml.Node, cluster: ClusterSpec) -> tuple[Pipeline, ...]:
    """`pipeline: {from: TOPIC, to: TOPIC, by: key | value}` (or `by: header, header: NAME`), or a list of them (a
    chain of stages)."""
    items = r.sequence(node, "pipeline") if isinstance(node, yaml.SequenceNode) else [node]
    if not items or len(items) > MAX_PIPELINES:
        raise r.fail(node, "pipeline", _("give 1 to %(n)s pipelines") % {"n": MAX_PIPELINES})
    topics = [t.name for t in cluster.topics]
    out = []
    for i, item in enumerate(items):
        at = "pipeline" if len(items) == 1 and not isinstance(node, yaml.SequenceNode) else join_field("pipeline", i)
        pairs = r.mapping(item, at)
        for key, (key_node, _v) in pairs.items():
            if key not in ("from", "to", "by", "header"):
                raise r.fail(key_node, join_field(at, key), unknown_name(_("key"), key, ("from", "to", "by", "header")))
        ends = {}
        for end in ("from", "to"):
            if end not in pairs:
                raise r.fail(item, join_field(at, end), _("missing (required)"))
            topic = r.string(pairs[end][1], join_field(at, end))
            if topic not in topics:
                raise r.fail(pairs[end][1], join_field(at, end), unknown_name(_("topic"), topic, topics, _("topics")))
            ends[end] = topic
        if ends["from"] == ends["to"]:
            raise r.fail(item, join_field(at, "to"), _("a pipeline writes to another topic than it reads"))
        by = r.string(pairs["by"][1], join_field(at, "by")) if "by" in pairs else "key"
        if by not in PIPELINE_BY:
            raise r.fail(pairs["by"][1], join_field(at, "by"), unknown_name(_("pipeline mapping"), by, PIPELINE_BY))
        header = None
        if by == "header":
            if "header" not in pairs:
                raise r.fail(item, join_field(at, "header"), _("`by: header` names the header (`header: NAME`)"))
            header = r.string(pairs["header"][1], join_field(at, "header"))
            if not header or len(header) > HEADER_NAME_CHARS:
                raise r.fail(
                    pairs["header"][1],
                    join_field(at, "header"),
                    _("a header name of 1 to %(n)s characters") % {"n": HEADER_NAME_CHARS},
                )
        elif "header" in pairs:
            raise r.fail(pairs["header"][0], join_field(at, "header"), _("`header:` goes with `by: header`"))
        out.append(Pipeline(ends["from"], ends["to"], by, header))
    return tuple(out)


def _tags(r: Reader, node: yaml.Node) -> tuple[str, ...]:
    return tuple(r.string(n, join_field("tags", i)) for i, n in enumerate(r.sequence(node, "tags")))


def _parse_cluster(r: Reader, node: yaml.Node | None) -> ClusterSpec:
    if node is None:
        return ClusterSpec()
    pairs = r.mapping(node, "cluster", allow_null=True)
    keys = ("brokers", "replication_factor", "config", "topics")
    for key, (key_node, _value_node) in pairs.items():
        if key not in keys:
            raise r.fail(key_node, join_field("cluster", key), unknown_name(_("key"), key, keys))
    brokers = r.integer(pairs["brokers"][1], "cluster.brokers", 1, MAX_BROKERS) if "brokers" in pairs else 3
    # the topics' replication factor: at most one replica per broker (CreateTopics: INVALID_REPLICATION_FACTOR)
    replication_factor = (
        r.integer(pairs["replication_factor"][1], "cluster.replication_factor", 1, brokers)
        if "replication_factor" in pairs
        else None
    )
    config: dict[str, Any] = {}
    if "config" in pairs:
        for key, (key_node, value_node) in r.mapping(pairs["config"][1], "cluster.config", allow_null=True).items():
            where = join_field("cluster.config", key)
            # `sim.*` are the simulator's knobs (latencies, a slow broker); Kafka and the real backend ignore them.
            if key not in CLUSTER_CONFIG and not _SIM_KEY.match(key):
                raise r.fail(
                    key_node,
                    where,
                    unknown_name(_("setting"), key, CLUSTER_CONFIG, _("settings")) + _(" (or a simulator knob sim.*)"),
                )
            if CLUSTER_CONFIG.get(key) is bool:
                config[key] = r.boolean(value_node, where)
            else:
                config[key] = r.integer(value_node, where, 0 if key.startswith("sim.") else 1)
    topics = []
    if "topics" in pairs:
        for name, (key_node, value_node) in r.mapping(pairs["topics"][1], "cluster.topics").items():
            where = join_field("cluster.topics", name)
            if not _TOPIC_NAME.match(name) or name.startswith("__"):
                raise r.fail(
                    key_node,
                    where,
                    _("%(name)s is not a valid topic name (letters, digits, '.', '_', '-'; not internal)")
                    % {"name": repr(name)},
                )
            spec = r.mapping(value_node, where, allow_null=True)
            for key, (k_node, _value_node) in spec.items():
                if key != "partitions":
                    raise r.fail(k_node, join_field(where, key), unknown_name(_("key"), key, ("partitions",)))
            partitions = (
                r.integer(spec["partitions"][1], join_field(where, "partitions"), 1, MAX_PARTITIONS)
                if "partitions" in spec
                else 1
            )
            topics.append(TopicSpec(name, partitions))
            if sum(t.partitions for t in topics) > MAX_CLUSTER_PARTITIONS:
                raise r.fail(
                    value_node,
                    where,
                    _("a cluster has at most %(n)s partitions in all (a page draws every one)")
                    % {"n": MAX_CLUSTER_PARTITIONS},
                )
    return ClusterSpec(brokers=brokers, config=config, topics=tuple(topics), replication_factor=replication_factor)


def _parse_actors(r: Reader, node: yaml.Node, cluster: ClusterSpec) -> dict[str, ActorSpec]:
    actors: dict[str, ActorSpec] = {}
    pairs = r.mapping(node, "actors")
    if not pairs:
        raise r.fail(node, "actors", _("declare at least one actor"))
    if len(pairs) > MAX_ACTORS:
        raise r.fail(node, "actors", _("at most %(max)s actors, found %(n)s") % {"max": MAX_ACTORS, "n": len(pairs)})
    for name, (name_node, spec_node) in pairs.items():
        spec = r.attempt(_parse_actor, r, name, name_node, spec_node, cluster)
        if spec is None:
            # An actor with an error is still declared, with its kind when that much was readable: its steps'
            # actions are checked, not called unknown (their arguments cannot be).
            kinds = [k.value for k, _v in spec_node.value] if isinstance(spec_node, yaml.MappingNode) else []
            kind = kinds[0] if len(kinds) == 1 and kinds[0] in (PRODUCER, CONSUMER) else "broken"
            spec = ActorSpec(name=name, kind=kind)
            r.broken.add(name)
        actors[name] = spec
    return actors


def _parse_actor(r: Reader, name: str, name_node: yaml.Node, spec_node: yaml.Node, cluster: ClusterSpec) -> ActorSpec:
    where = join_field("actors", name)
    if not _ACTOR_NAME.match(name):
        raise r.fail(
            name_node,
            where,
            _("%(name)s is not a valid actor name (a letter, then letters, digits, '_' or '-')") % {"name": repr(name)},
        )
    if name in CLUSTER_ACTORS or name in (NOTE, APP):
        raise r.fail(name_node, where, _("%(name)s is reserved for cluster steps and notes") % {"name": repr(name)})
    kind_pairs = r.mapping(spec_node, where)
    if len(kind_pairs) != 1 or next(iter(kind_pairs)) not in (PRODUCER, CONSUMER):
        raise r.fail(spec_node, where, _("expected exactly one of producer: {...} or consumer: {...}"))
    kind, (_kind_node, config_node) = next(iter(kind_pairs.items()))
    where = join_field(where, kind)
    schema = PRODUCER_CONFIG if kind == PRODUCER else CONSUMER_CONFIG
    config: dict[str, Any] = {}
    topics: tuple[str, ...] = ()
    value_nodes: dict[str, yaml.Node] = {}
    for key, (key_node, value_node) in r.mapping(config_node, where, allow_null=True).items():
        at = join_field(where, key)
        value_nodes[key] = value_node
        kind_of = schema.get(key)
        if kind_of is None:
            listing = _("producer settings") if kind == PRODUCER else _("consumer settings")
            context = _(" for a producer") if kind == PRODUCER else _(" for a consumer")
            raise r.fail(key_node, at, unknown_name(_("setting"), key, schema, listing, context))
        if isinstance(kind_of, tuple):  # the values Kafka allows
            config[key] = r.choice(value_node, at, kind_of)
        elif kind_of is int:
            config[key] = r.integer(value_node, at, 0)
        elif kind_of is bool:
            config[key] = r.boolean(value_node, at)
        elif kind_of is str:
            config[key] = r.string(value_node, at)
        elif kind_of is list:  # consumer topics
            items = r.sequence(value_node, at)
            if not items:
                raise r.fail(value_node, at, _("name at least one topic"))
            names = []
            for i, item in enumerate(items):
                topic = r.string(item, join_field(at, i))
                if cluster.topic(topic) is None:
                    raise r.fail(
                        item, join_field(at, i), unknown_name(_("topic"), topic, (t.name for t in cluster.topics))
                    )
                names.append(topic)
            topics = tuple(names)
    if kind == PRODUCER:
        # The contract's `audit: {producer: {}}` is idempotent: make that explicit for both backends
        # (librdkafka's own default is enable.idempotence=false; Kafka's Java client defaults to true).
        config.setdefault("enable.idempotence", True)
        if "transactional.id" in config and not config["enable.idempotence"]:
            raise r.fail(
                config_node,
                join_field(where, "enable.idempotence"),
                _("a transactional producer is always idempotent: remove enable.idempotence: false"),
            )
    else:
        if not topics:
            raise r.fail(
                config_node,
                join_field(where, "topics"),
                _("missing: a consumer names the topics it reads, e.g. topics: [orders]"),
            )
        # confluent-kafka (librdkafka) defaults to read_committed; Kafka's Java consumer to read_uncommitted.
        config.setdefault("isolation.level", "read_committed")
        if "group.instance.id" in config:
            _check_instance_id(r, value_nodes["group.instance.id"], where, config)
    return ActorSpec(name=name, kind=kind, config=config, topics=topics)


def _check_instance_id(r: Reader, node: yaml.Node, where: str, config: dict[str, Any]) -> None:
    """group.instance.id (KIP-345) names a static member of the consumer's group: it needs a group.id, and it is
    what kafka-clients' JoinGroupRequest.validateGroupInstanceId accepts (a topic name's rules). Two consumers may
    share one: that is the second instance a static member's id fences."""
    at = join_field(where, "group.instance.id")
    instance = config["group.instance.id"]
    if not config.get("group.id"):
        raise r.fail(node, at, _("a static member (group.instance.id) is a member of a group: give it a group.id"))
    if not _TOPIC_NAME.match(instance) or instance in (".", ".."):
        raise r.fail(
            node,
            at,
            _("%(value)s is not a valid group.instance.id (letters, digits, '.', '_', '-'; at most 249)")
            % {"value": repr(instance)},
        )


def _parse_expect(
    r: Reader, node: yaml.Node, cluster: ClusterSpec, actors: dict[str, ActorSpec], section: str = "expect"
) -> tuple[dict[str, Any], dict[str, int]]:
    """An `expect:` block (or a `goal:`, which has the same keys): what must be observed, and the line of each check."""
    expect: dict[str, Any] = {}
    lines: dict[str, int] = {}
    blocks = r.mapping(node, section)
    keys = (*EXPECT_KEYS, BY_PROFILE) if section == "expect" else EXPECT_KEYS  # by_profile: only in expect, one level
    for key, (key_node, _value_node) in blocks.items():
        if key not in keys:
            r.errors.append(r.fail(key_node, join_field(section, key), unknown_name(_("expectation"), key, keys)))
    if BY_PROFILE in blocks and section == "expect":
        r.attempt(_by_profile, r, blocks[BY_PROFILE][1], cluster, actors, expect)

    def values(value_node: yaml.Node, at: str) -> list[str]:
        return [r.string(n, join_field(at, i), non_empty=False) for i, n in enumerate(r.sequence(value_node, at))]

    def consumers_block() -> None:
        expect["consumers"] = {}
        for name, (name_node, tps_node) in r.mapping(blocks["consumers"][1], f"{section}.consumers").items():
            at = join_field(f"{section}.consumers", name)
            spec = actors.get(name)
            if name in r.broken:
                continue
            if spec is None or spec.kind != CONSUMER:
                raise r.fail(
                    name_node,
                    at,
                    unknown_name(_("consumer"), name, [a.name for a in actors.values() if a.kind == CONSUMER]),
                )
            per = expect["consumers"][name] = {}
            for tp_name, (tp_node, vals_node) in r.mapping(tps_node, at).items():
                tp = _parse_tp(r, tp_node, join_field(at, tp_name), cluster, spec.topics)
                per[tp] = values(vals_node, join_field(at, tp_name))
                lines[f"consumers.{name}.{tp}"] = tp_node.start_mark.line + 1

    def logs_block() -> None:
        expect["logs"] = {}
        for tp_name, (tp_node, vals_node) in r.mapping(blocks["logs"][1], f"{section}.logs").items():
            at = join_field(f"{section}.logs", tp_name)
            tp = _parse_tp(r, tp_node, at, cluster)
            expect["logs"][tp] = values(vals_node, at)
            lines[f"logs.{tp}"] = tp_node.start_mark.line + 1

    def watermarks_block() -> None:
        expect["watermarks"] = {}
        for tp_name, (tp_node, marks_node) in r.mapping(blocks["watermarks"][1], f"{section}.watermarks").items():
            at = join_field(f"{section}.watermarks", tp_name)
            tp = _parse_tp(r, tp_node, at, cluster)
            marks = {}
            for mark, (mark_node, value_node) in r.mapping(marks_node, at).items():
                if mark not in ("high_watermark", "last_stable_offset"):
                    raise r.fail(
                        mark_node,
                        join_field(at, mark),
                        unknown_name(_("key"), mark, ("high_watermark", "last_stable_offset")),
                    )
                marks[mark] = r.integer(value_node, join_field(at, mark), 0)
            if not marks:
                raise r.fail(marks_node, at, _("name high_watermark and/or last_stable_offset"))
            expect["watermarks"][tp] = marks
            lines[f"watermarks.{tp}"] = tp_node.start_mark.line + 1

    def transactions_block() -> None:
        expect["transactions"] = {}
        declared = sorted({a.transactional_id for a in actors.values() if a.transactional_id})
        for txid, (txid_node, state_node) in r.mapping(blocks["transactions"][1], f"{section}.transactions").items():
            at = join_field(f"{section}.transactions", txid)
            if txid not in declared:
                raise r.fail(txid_node, at, unknown_name("transactional.id", txid, declared, _("declared")))
            if r.is_null(state_node):  # extension: the coordinator has no such transactional id (never, or expired)
                expect["transactions"][txid] = None
                lines[f"transactions.{txid}"] = txid_node.start_mark.line + 1
                continue
            want: dict[str, Any] = {}
            for key, (k_node, v_node) in r.mapping(state_node, at).items():
                if key == "state":
                    state = r.string(v_node, join_field(at, key))
                    if state not in TXN_STATES:
                        raise r.fail(
                            v_node,
                            join_field(at, key),
                            unknown_name(_("transaction state"), state, TXN_STATES, _("states")),
                        )
                    want["state"] = state
                elif key == "epoch":
                    want["epoch"] = r.integer(v_node, join_field(at, key), 0, 32767)
                elif key == "producer":  # extension: the normalised producer id, P1, P2, ...
                    producer = r.string(v_node, join_field(at, key))
                    if not re.match(r"^P[1-9][0-9]*$", producer):
                        raise r.fail(
                            v_node,
                            join_field(at, key),
                            _("expected a normalised producer id such as P1, got %(id)s") % {"id": repr(producer)},
                        )
                    want["producer"] = producer
                else:
                    raise r.fail(
                        k_node, join_field(at, key), unknown_name(_("key"), key, ("state", "epoch", "producer"))
                    )
            if not want:
                raise r.fail(state_node, at, _("name state, epoch and/or producer"))
            expect["transactions"][txid] = want
            lines[f"transactions.{txid}"] = txid_node.start_mark.line + 1

    def groups_block() -> None:
        expect["groups"] = {}
        groups = sorted({a.group_id for a in actors.values() if a.group_id})
        for group, (group_node, tps_node) in r.mapping(blocks["groups"][1], f"{section}.groups").items():
            at = join_field(f"{section}.groups", group)
            if group not in groups:
                raise r.fail(group_node, at, unknown_name(_("group"), group, groups))
            per = expect["groups"][group] = {}
            for tp_name, (tp_node, offset_node) in r.mapping(tps_node, at).items():
                tp = _parse_tp(r, tp_node, join_field(at, tp_name), cluster)
                per[tp] = None if r.is_null(offset_node) else r.integer(offset_node, join_field(at, tp_name), 0)
                lines[f"groups.{group}.{tp}"] = tp_node.start_mark.line + 1

    def anomalies_block() -> None:
        from playground.scenario.anomalies import RULES

        at = f"{section}.anomalies"
        names = []
        for i, n in enumerate(r.sequence(blocks["anomalies"][1], at)):
            name = r.string(n, join_field(at, i))
            if name not in RULES:
                raise r.fail(n, join_field(at, i), unknown_name(_("anomaly rule"), name, RULES, _("rules")))
            names.append(name)
        expect["anomalies"] = sorted(set(names))
        lines["anomalies"] = blocks["anomalies"][0].start_mark.line + 1

    def producers_block() -> None:
        expect["producers"] = {}
        producers = [a.name for a in actors.values() if a.kind == PRODUCER]
        for name, (name_node, state_node) in r.mapping(blocks["producers"][1], f"{section}.producers").items():
            at = join_field(f"{section}.producers", name)
            if name not in producers:
                raise r.fail(name_node, at, unknown_name(_("producer"), name, producers))
            want = {}
            for key, (k_node, v_node) in r.mapping(state_node, at).items():
                if key != "state":
                    raise r.fail(k_node, join_field(at, key), unknown_name(_("key"), key, ("state",)))
                state = r.string(v_node, join_field(at, key))
                if state not in CLIENT_STATES:
                    raise r.fail(v_node, join_field(at, key), unknown_name(_("client state"), state, CLIENT_STATES))
                want["state"] = state
            if not want:
                raise r.fail(state_node, at, _("name the client's state"))
            expect["producers"][name] = want
            lines[f"producers.{name}"] = name_node.start_mark.line + 1

    def callbacks_block() -> None:
        expect["callbacks"] = {}
        producers = [a.name for a in actors.values() if a.kind == PRODUCER]
        for name, (name_node, values_node) in r.mapping(blocks["callbacks"][1], f"{section}.callbacks").items():
            at = join_field(f"{section}.callbacks", name)
            if name not in producers:
                raise r.fail(name_node, at, unknown_name(_("producer"), name, producers))
            per = expect["callbacks"][name] = {}
            for value, (value_node, calls_node) in r.mapping(values_node, at).items():
                where = join_field(at, value)
                calls = r.sequence(calls_node, where)
                per[value] = [_outcomes(r, n, join_field(where, i))[0] for i, n in enumerate(calls)]
                lines[f"callbacks.{name}.{value}"] = value_node.start_mark.line + 1

    for key, block in (
        ("producers", producers_block),
        ("callbacks", callbacks_block),
        ("consumers", consumers_block),
        ("logs", logs_block),
        ("watermarks", watermarks_block),
        ("transactions", transactions_block),
        ("groups", groups_block),
        ("anomalies", anomalies_block),
    ):
        if key in blocks:
            r.attempt(block)  # one block's error does not hide another's
    return expect, lines


def _by_profile(
    r: Reader, node: yaml.Node, cluster: ClusterSpec, actors: dict[str, ActorSpec], expect: dict[str, Any]
) -> None:
    """`expect.by_profile: {SELECTOR: {checks}}`: checks that replace the plain block's same check in the profiles
    the selector names (a whole profile "4-java", a client "java" or a Kafka version "4"). Stored in
    expect["by_profile"] as {selector: (block, lines)}; parse_scenario takes it out."""
    at = f"expect.{BY_PROFILE}"
    out: dict[str, tuple[dict[str, Any], dict[str, int]]] = {}
    for written, (key_node, block_node) in r.mapping(node, at).items():
        where = join_field(at, written)
        selector = canonical_selector(written)
        if selector not in PROFILE_SELECTORS:
            r.errors.append(
                r.fail(
                    key_node,
                    where,
                    unknown_name(
                        _("profile key"),
                        selector,
                        PROFILE_SELECTORS,
                        _("keys: a profile, a client release, a client or a Kafka version"),
                    ),
                )
            )
            continue
        block, lines = _parse_expect(r, block_node, cluster, actors, where)
        if not block:
            if not r.mapping(block_node, where):
                r.errors.append(r.fail(block_node, where, _("name at least one check (the same keys as expect:)")))
            continue
        out[selector] = (block, lines)
    if not out and not r.mapping(node, at):
        raise r.fail(node, at, _("name at least one profile, e.g. by_profile: {java: {transactions: {...}}}"))
    expect[BY_PROFILE] = out
