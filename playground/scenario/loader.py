"""Loading and validating scenario files (format 1). Every error names the file, the line and the field; one pass
finds every bad line. The YAML underneath is read by playground/scenario/reader.py (nodes only, each with its line).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from playground.engine.spec import (
    APP,
    APP_ACTIONS,
    CLIENT_KEYS,
    CLUSTER_ACTORS,
    CONSUMER,
    CONSUMER_ACTIONS,
    DEFAULT_PROFILE,
    KAFKA_RELEASES,
    NOTE,
    PRODUCER,
    PRODUCER_ACTIONS,
    ActorSpec,
    ClusterSpec,
    Profile,
    Step,
    TopicSpec,
    parse_client,
)
from playground.scenario.model import (
    BY_PROFILE,
    CLIENT_STATES,
    CLUSTER_CONFIG,
    CONSUMER_CONFIG,
    DEFAULT_LANG,
    DEFAULT_SELECTOR,
    EXPECT_KEYS,
    FORMAT,
    MAX_ACTORS,
    MAX_BROKERS,
    MAX_CHOICES,
    MAX_HINTS,
    MAX_PARTITIONS,
    MAX_STEPS,
    NAMED_PROFILES,
    OUTCOMES,
    PRODUCER_CONFIG,
    PROFILE_KEYS,
    PROFILE_SELECTORS,
    REQUIRED_TOP_LEVEL,
    TOP_LEVEL_KEYS,
    TXN_STATES,
    Scenario,
    ScenarioError,
    canonical_selector,
    for_profile,
    profile_problems,
    selectors_of,
)
from playground.scenario.reader import INT, Reader, compose, did_you_mean, join_field, unknown_name

if TYPE_CHECKING:
    from playground.scenario.database import DatabaseSpec

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_ACTOR_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_SIM_KEY = re.compile(r"^sim(?:\.[a-z0-9_-]+)+$")
_DURATION = re.compile(r"^([0-9]+)\s*(ms|s|m|h)$")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}
_SQL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,62}$")
_FUTURE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
SEED_MAX = 2**31 - 1  # a session's seed is stored as a 32-bit integer (and the Play form takes no more)
MAX_CLUSTER_PARTITIONS = 128  # all topics together
MAX_TABLES = 16  # a database's tables (each is built, with its seed rows, when the file is checked)

# A step's `expect:` as written: its outcomes in every profile, or its outcomes per profile selector (kept aside in
# Reader.step_expects and resolved per run: a Step holds outcomes for one profile).
StepExpect = tuple[str, ...] | dict[str, tuple[str, ...]] | None

# --------------------------------------------------------------------------------------------------------------
# Loading


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(str(path), 0, "file", f"cannot read: {exc}") from None
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
                f"{scenario.id!r} is also the id of {seen[scenario.id]}",
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
    for key, (key_node, _) in top.items():
        if key not in TOP_LEVEL_KEYS:
            reader.errors.append(reader.fail(key_node, key, unknown_name("top-level key", key, TOP_LEVEL_KEYS, "keys")))
    for key in REQUIRED_TOP_LEVEL:
        if key not in top:
            reader.errors.append(reader.fail(root, key, "missing (required)"))

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
                reader.fail(node("goal"), "goal", "name at least one check (the same keys as expect:)")
            )
    hints = reader.attempt(_hints, reader, node("hints"), default=()) if "hints" in top else ()
    if actors and cluster is not None and not reader.errors:
        # settings the file's own profile refuses (a broker setting its Kafka lacks, a client's construction check)
        for problem in profile_problems(cluster, actors, profile):
            at, _colon, message = problem.partition(": ")
            where = node("profile") if "profile" in top else node("cluster") or root
            reader.errors.append(reader.fail(where, at, f"{message} (profile {profile.key})"))
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
        raise r.fail(node, "format", f"this playground reads format {FORMAT}, not {fmt}")
    return fmt


def _scenario_id(r: Reader, node: yaml.Node) -> str:
    scenario_id = r.string(node, "id")
    if not _SLUG.match(scenario_id):
        raise r.fail(node, "id", f"{scenario_id!r} is not a slug (lower-case letters, digits and dashes)")
    return scenario_id


def _profile(r: Reader, node: yaml.Node) -> Profile:
    """`profile: {kafka: "3.5" | "3.9" | "4", client: librdkafka | java | java:3.5}`: which Kafka, which client and
    which kafka-clients release the story is told in (both keys optional; the default is what a file without
    `profile:` has always meant; `java` alone is kafka-clients of the cluster's own release)."""
    pairs = r.mapping(node, "profile", allow_null=True)
    for key, (key_node, _v) in pairs.items():
        if key not in PROFILE_KEYS:
            raise r.fail(key_node, join_field("profile", key), unknown_name("key", key, PROFILE_KEYS))
    kafka, client = DEFAULT_PROFILE.kafka, DEFAULT_PROFILE.client_key
    if "kafka" in pairs:
        value_node = pairs["kafka"][1]
        kafka = r.string(value_node, "profile.kafka")
        if kafka not in KAFKA_RELEASES:
            versions = " or ".join(f"{v} (Kafka {release})" for v, release in KAFKA_RELEASES.items())
            raise r.fail(
                value_node, "profile.kafka", f"{kafka!r} is not a Kafka version of this playground: {versions}"
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
            unknown_name("client", client, CLIENT_KEYS) + " (java:RELEASE is kafka-clients of that Kafka version)",
        ) from None


def _hints(r: Reader, node: yaml.Node) -> tuple[dict[str, str], ...]:
    items = r.sequence(node, "hints")
    if not items or len(items) > MAX_HINTS:
        raise r.fail(node, "hints", f"give 1 to {MAX_HINTS} hints")
    return tuple(r.texts(item, join_field("hints", i)) for i, item in enumerate(items))


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
            raise r.fail(key_node, join_field(at, key), unknown_name("key", key, ("question", "choices", "answer")))
    for key in ("question", "choices", "answer"):
        if key not in pairs:
            raise r.fail(node, join_field(at, key), "missing (a prediction has a question, its choices and the answer)")
    question = r.texts(pairs["question"][1], join_field(at, "question"))
    items = r.sequence(pairs["choices"][1], join_field(at, "choices"))
    if not 2 <= len(items) <= MAX_CHOICES:
        raise r.fail(
            pairs["choices"][1], join_field(at, "choices"), f"give 2 to {MAX_CHOICES} choices, found {len(items)}"
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
        "answer",
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
    profile."""
    pairs = r.mapping(node, at)
    if not pairs:
        raise r.fail(node, at, f"name the {what}s per profile, e.g. {example}")
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
                    "profile key",
                    selector,
                    allowed,
                    "keys: a profile, a client release, a client, a Kafka version or default",
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
                    f"no {what} for profile {names[0]}: add {', '.join(offered)} or {DEFAULT_SELECTOR} ({what}s per profile name every profile)",
                )
    return by_selector


def _parse_database(r: Reader, node: yaml.Node) -> DatabaseSpec:
    """`database: {tables: {NAME: {columns: "id integer primary key, ...", rows: [[1, new], ...]}}, reconcile: {...}}`:
    the application's tables, built once here in a scratch database so that a wrong column or row is this file's
    error (with its line), not a step's surprise."""
    from playground.scenario.database import Database, DatabaseSpec, SqlError, Table

    pairs = r.mapping(node, "database")
    for key, (key_node, _v) in pairs.items():
        if key not in ("tables", "reconcile"):
            raise r.fail(key_node, join_field("database", key), unknown_name("key", key, ("tables", "reconcile")))
    if "tables" not in pairs:
        raise r.fail(node, "database.tables", "missing: name at least one table")
    tables = []
    table_nodes: dict[str, yaml.Node] = {}
    declared = r.mapping(pairs["tables"][1], "database.tables")
    if len(declared) > MAX_TABLES:
        raise r.fail(pairs["tables"][1], "database.tables", f"at most {MAX_TABLES} tables, found {len(declared)}")
    for name, (name_node, table_node) in declared.items():
        where = join_field("database.tables", name)
        if not _SQL_NAME.match(name) or name.lower().startswith(("sqlite_", "kafka_", "playground_")):
            raise r.fail(
                name_node,
                where,
                f"{name!r} is not a table name this database allows (letters, digits, '_'; not sqlite_*, kafka_*, playground_*)",
            )
        spec = r.mapping(table_node, where)
        for key, (key_node, _v) in spec.items():
            if key not in ("columns", "rows"):
                raise r.fail(key_node, join_field(where, key), unknown_name("key", key, ("columns", "rows")))
        if "columns" not in spec:
            raise r.fail(
                table_node,
                join_field(where, "columns"),
                'missing: the column definitions as SQL, e.g. "id integer primary key, status text"',
            )
        columns = r.string(spec["columns"][1], join_field(where, "columns"))
        rows = []
        for i, row_node in enumerate(r.sequence(spec["rows"][1], join_field(where, "rows")) if "rows" in spec else []):
            cells = r.sequence(row_node, join_field(join_field(where, "rows"), i))
            rows.append(tuple(_sql_value(r, c) for c in cells))
        tables.append(Table(name, columns, tuple(rows)))
        table_nodes[name] = table_node
    # Built once, as a session builds it (one statement's time for all the tables and their rows, within the
    # rows and bytes a session's database may hold): a wrong column or row is the table's error, with its line.
    try:
        Database(DatabaseSpec(tuple(tables)))
    except SqlError as exc:
        name = exc.table or tables[-1].name
        raise r.fail(
            table_nodes.get(name, pairs["tables"][1]),
            join_field("database.tables", name),
            f"the database refuses this table: {exc}",
        ) from None
    reconcile, title = None, {}
    if "reconcile" in pairs:
        rec = r.mapping(pairs["reconcile"][1], "database.reconcile")
        for key, (key_node, _v) in rec.items():
            if key not in ("title", "sql", "checks"):
                raise r.fail(
                    key_node,
                    join_field("database.reconcile", key),
                    unknown_name("key", key, ("title", "sql", "checks")),
                )
        if "sql" not in rec:
            raise r.fail(pairs["reconcile"][1], "database.reconcile.sql", "missing: the reconciliation query")
        reconcile = r.string(rec["sql"][1], "database.reconcile.sql")
        title = r.texts(rec["title"][1], "database.reconcile.title") if "title" in rec else {}
        checks = (
            tuple(
                r.string(n, join_field("database.reconcile.checks", i))
                for i, n in enumerate(r.sequence(rec["checks"][1], "database.reconcile.checks"))
            )
            if "checks" in rec
            else ()
        )
        probe = Database(DatabaseSpec(tuple(tables), reconcile, title, checks)).reconcile({})
        assert probe is not None  # the spec has a query: `reconcile` is not empty
        if probe["error"]:
            raise r.fail(rec["sql"][1], "database.reconcile.sql", probe["error"])
        missing = [c for c in checks if c not in probe["columns"]]
        if missing:
            raise r.fail(
                rec["checks"][1],
                "database.reconcile.checks",
                f"no column {', '.join(missing)} in the query's result ({', '.join(probe['columns'])})",
            )
    return DatabaseSpec(tuple(tables), reconcile, title, checks if "reconcile" in pairs else ())


def _sql_value(r: Reader, node: yaml.Node) -> Any:
    """A cell of a table's rows: a whole number stays a number, null stays NULL, anything else is text."""
    if r.is_null(node):
        return None
    text = r.string(node, "database", non_empty=False)
    if INT.match(text) and not node.style:
        value = int(text) if len(text) <= 20 else None
        if value is None or not -(2**63) <= value < 2**63:
            raise r.fail(
                node,
                "database",
                f"{text[:24]}{'...' if len(text) > 24 else ''} is not a 64-bit integer (quote it to keep it as text)",
            )
        return value
    return text


def _app_args(
    r: Reader, action: str, node: yaml.Node | None, label_node: yaml.Node, where: str
) -> tuple[dict[str, Any], StepExpect]:
    """`app.sql: "UPDATE ..."` (or `{sql: ..., expect: ...}`); the other app actions take only `expect`."""
    if node is None or r.is_null(node):
        if action == "sql":
            raise r.fail(
                label_node,
                where,
                "missing: app.sql needs its statement, e.g. app.sql: \"UPDATE orders SET status = 'paid' WHERE id = 1\"",
            )
        return {}, None
    if isinstance(node, yaml.ScalarNode):
        if action != "sql":
            raise r.fail(node, where, f"app.{action} takes no argument (only expect)")
        return {"sql": r.string(node, where)}, None
    raw = r.mapping(node, where)
    expect = _step_expect(r, raw.pop("expect", None), where)
    args: dict[str, Any] = {}
    for key, (key_node, value_node) in raw.items():
        if key != "sql" or action != "sql":
            raise r.fail(
                key_node,
                join_field(where, key),
                f"unknown argument {key!r}; app.{action} takes {'sql and ' if action == 'sql' else ''}expect",
            )
        args["sql"] = r.string(value_node, join_field(where, key))
    if action == "sql" and "sql" not in args:
        raise r.fail(node, where, "missing: sql")
    return args, expect


def _tags(r: Reader, node: yaml.Node) -> tuple[str, ...]:
    return tuple(r.string(n, join_field("tags", i)) for i, n in enumerate(r.sequence(node, "tags")))


def _parse_cluster(r: Reader, node: yaml.Node | None) -> ClusterSpec:
    if node is None:
        return ClusterSpec()
    pairs = r.mapping(node, "cluster", allow_null=True)
    keys = ("brokers", "replication_factor", "config", "topics")
    for key, (key_node, _) in pairs.items():
        if key not in keys:
            raise r.fail(key_node, join_field("cluster", key), unknown_name("key", key, keys))
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
                    unknown_name("setting", key, CLUSTER_CONFIG, "settings") + " (or a simulator knob sim.*)",
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
                    f"{name!r} is not a valid topic name (letters, digits, '.', '_', '-'; not internal)",
                )
            spec = r.mapping(value_node, where, allow_null=True)
            for key, (k_node, _) in spec.items():
                if key != "partitions":
                    raise r.fail(k_node, join_field(where, key), unknown_name("key", key, ("partitions",)))
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
                    f"a cluster has at most {MAX_CLUSTER_PARTITIONS} partitions in all (a page draws every one)",
                )
    return ClusterSpec(brokers=brokers, config=config, topics=tuple(topics), replication_factor=replication_factor)


def _parse_actors(r: Reader, node: yaml.Node, cluster: ClusterSpec) -> dict[str, ActorSpec]:
    actors: dict[str, ActorSpec] = {}
    pairs = r.mapping(node, "actors")
    if not pairs:
        raise r.fail(node, "actors", "declare at least one actor")
    if len(pairs) > MAX_ACTORS:
        raise r.fail(node, "actors", f"at most {MAX_ACTORS} actors, found {len(pairs)}")
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
            name_node, where, f"{name!r} is not a valid actor name (a letter, then letters, digits, '_' or '-')"
        )
    if name in CLUSTER_ACTORS or name in (NOTE, APP):
        raise r.fail(name_node, where, f"{name!r} is reserved for cluster steps and notes")
    kind_pairs = r.mapping(spec_node, where)
    if len(kind_pairs) != 1 or next(iter(kind_pairs)) not in (PRODUCER, CONSUMER):
        raise r.fail(spec_node, where, "expected exactly one of producer: {...} or consumer: {...}")
    kind, (_kind_node, config_node) = next(iter(kind_pairs.items()))
    where = join_field(where, kind)
    schema = PRODUCER_CONFIG if kind == PRODUCER else CONSUMER_CONFIG
    config: dict[str, Any] = {}
    topics: tuple[str, ...] = ()
    for key, (key_node, value_node) in r.mapping(config_node, where, allow_null=True).items():
        at = join_field(where, key)
        kind_of = schema.get(key)
        if kind_of is None:
            raise r.fail(key_node, at, unknown_name("setting", key, schema, f"{kind} settings", f" for a {kind}"))
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
                raise r.fail(value_node, at, "name at least one topic")
            names = []
            for i, item in enumerate(items):
                topic = r.string(item, join_field(at, i))
                if cluster.topic(topic) is None:
                    raise r.fail(
                        item, join_field(at, i), unknown_name("topic", topic, (t.name for t in cluster.topics))
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
                "a transactional producer is always idempotent: remove enable.idempotence: false",
            )
    else:
        if not topics:
            raise r.fail(
                config_node,
                join_field(where, "topics"),
                "missing: a consumer names the topics it reads, e.g. topics: [orders]",
            )
        # confluent-kafka (librdkafka) defaults to read_committed; Kafka's Java consumer to read_uncommitted.
        config.setdefault("isolation.level", "read_committed")
    return ActorSpec(name=name, kind=kind, config=config, topics=topics)


def _parse_steps(r: Reader, node: yaml.Node, cluster: ClusterSpec, actors: dict[str, ActorSpec]) -> tuple[Step, ...]:
    steps = []
    items = r.sequence(node, "steps")
    if not items:
        raise r.fail(node, "steps", "a scenario has at least one step")
    if len(items) > MAX_STEPS:
        raise r.fail(items[MAX_STEPS], "steps", f"at most {MAX_STEPS:,} steps, found {len(items):,}")
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
                item, where, f"a step is one ACTOR.ACTION (with its arguments) or one note; found {', '.join(pairs)}"
            )
        label, (label_node, args_node) = next(iter(pairs.items()))

    if label == NOTE:
        if args_node is None:
            raise r.fail(item, where, "a note needs its text: note: TEXT or note: {en: ..., zh: ...}")
        if isinstance(args_node, yaml.ScalarNode) and args_node.style and args_node.value == "":
            # `note: ""`: a place for the author to write one (a session saved as a scenario has them); shows nothing
            return Step(actor=NOTE, action=NOTE, args={"text": {DEFAULT_LANG: ""}}, index=index, line=line)
        return Step(
            actor=NOTE, action=NOTE, args={"text": r.texts(args_node, join_field(where, NOTE))}, index=index, line=line
        )

    actor, dot, action = label.partition(".")
    if not dot or not actor or not action:
        raise r.fail(label_node, where, f"{label!r} is not ACTOR.ACTION (e.g. A.commit_transaction) or note")
    where = join_field(where, label)
    if actor == APP:
        if r.database is None:
            raise r.fail(label_node, where, "app steps run SQL on the scenario's database: declare one under database:")
        if action not in APP_ACTIONS:
            raise r.fail(label_node, where, unknown_name("action", action, APP_ACTIONS, "app actions", " for app"))
        args, expect = _app_args(r, action, args_node, label_node, where)
        return Step(
            actor=actor, action=action, args=args, expect=_outcomes_of(r, index, expect), index=index, line=line
        )
    if actor in CLUSTER_ACTORS:
        if action not in CLUSTER_ACTORS[actor]:
            raise r.fail(
                label_node,
                where,
                unknown_name("action", action, CLUSTER_ACTORS[actor], f"{actor} actions", f" for {actor}"),
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
        raise r.fail(label_node, where, unknown_name("actor", actor, actors))
    if spec.kind == "broken":  # its declaration has an error of its own: its steps cannot be checked
        return None
    known = PRODUCER_ACTIONS if spec.kind == PRODUCER else CONSUMER_ACTIONS
    if action not in known:
        raise r.fail(
            label_node,
            where,
            unknown_name("action", action, known, f"{spec.kind} actions", f" for {spec.kind} {actor!r}"),
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
    usage = f"{actor}.get needs the future an earlier {actor}.produce named (future: NAME)"
    if node is None or r.is_null(node):
        raise r.fail(label_node, where, f"missing: {usage}")
    expect: StepExpect = None
    predict = None
    value_node = node
    if isinstance(node, yaml.MappingNode):
        raw = r.mapping(node, where)
        expect = _step_expect(r, raw.pop("expect", None), where)
        predict = _predict(r, raw.pop("predict", None), where)
        for key, (key_node, _v) in raw.items():
            if key != "future":
                raise r.fail(key_node, join_field(where, key), f"unknown argument {key!r}; get takes future and expect")
        if "future" not in raw:
            raise r.fail(node, join_field(where, "future"), f"missing: {usage}")
        value_node = raw["future"][1]
    name = r.string(value_node, join_field(where, "future") if value_node is not node else where)
    if name not in named:
        raise r.fail(
            value_node, where, unknown_name("future", name, named, f"futures {actor}'s produce steps named before")
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
    _, node = pair
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
                    f"{name!r} is a librdkafka outcome: the Java client's outcomes are ok, an exception's simple class name such as ProducerFencedException, or a broker error",
                )
            if client == "librdkafka" and name.endswith("Exception"):
                raise r.fail(
                    n,
                    key_at,
                    f"{name!r} is a Java exception: librdkafka's outcomes are ok, a local error such as _FENCED, or a broker error",
                )
        return outcomes

    return _per_profile(r, node, at, read, "outcome", "{librdkafka: _FENCED, java: ProducerFencedException}")


def _outcome_nodes(r: Reader, node: yaml.Node, at: str) -> list[yaml.Node]:
    nodes = r.sequence(node, at) if isinstance(node, yaml.SequenceNode) else [node]
    if not nodes:
        raise r.fail(node, at, "name at least one outcome")
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
            raise r.fail(n, at, f"{name!r}: name the text the message must contain after '{outcome}: '")
        names.append(name)
    return tuple(names)


def _outcome_message(name: str) -> str:
    return (
        f"unknown outcome {name!r}{did_you_mean(name, OUTCOMES)}: use ok, a librdkafka error such as _FENCED, _STATE, "
        "_FATAL, a broker error such as INVALID_PRODUCER_EPOCH, or a Java exception such as ProducerFencedException"
    )


# Arguments per action: name -> kind. Kinds: "topic", "partition", "text", "bool", "consumer", "count".
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
    (PRODUCER, "send_offsets_to_transaction"): {"consumer": "consumer"},
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
                f"{action} takes {', '.join(schema)} and expect" if schema else f"{action} takes no argument but expect"
            )
            raise r.fail(key_node, at, f"unknown argument {name!r}{did_you_mean(name, schema)}; {takes}")
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
                    unknown_name("topic", topic, (t.name for t in cluster.topics))
                    + "; declare it under cluster.topics",
                )
            args[name] = topic
        elif kind == "consumer":
            other = r.string(value_node, at)
            target = actors.get(other)
            consumers = [a.name for a in actors.values() if a.kind == CONSUMER]
            if target is None or target.kind != CONSUMER:
                raise r.fail(value_node, at, unknown_name("consumer", other, consumers))
            if name == "consumer" and not target.group_id:
                raise r.fail(
                    value_node,
                    at,
                    f"consumer {other!r} has no group.id: send_offsets_to_transaction needs the consumer's group",
                )
            args[name] = other
        elif kind == "partition":
            args[name] = r.integer(value_node, at, 0)
        elif kind == "future":
            future = r.string(value_node, at)
            if not _FUTURE_NAME.match(future):
                raise r.fail(
                    value_node, at, f"{future!r} is not a future's name (a letter, then letters, digits, '_' or '-')"
                )
            args[name] = future
    if spec.kind == PRODUCER and action == "produce" and "future" in args:
        # a send whose future the application keeps and waits for later (`A.get: NAME`)
        waits = [k for k in ("await", "from") if k in args]
        if waits:
            raise r.fail(
                raw[waits[0]][0],
                join_field(where, waits[0]),
                f"with future: the send is waited for by a later {spec.name}.get (one record, not awaited here); remove {waits[0]}",
            )
        earlier = r.futures.setdefault(spec.name, {})
        if args["future"] in earlier:
            raise r.fail(
                raw["future"][1],
                join_field(where, "future"),
                f"future {args['future']!r} is already named at line {earlier[args['future']]}",
            )
        earlier[args["future"]] = raw["future"][1].start_mark.line + 1
    if spec.kind == PRODUCER and action == "produce":
        declared = cluster.topic(args["topic"]) if "topic" in args else None
        if declared is None:  # a topic argument names a declared topic (checked above)
            raise r.fail(node, join_field(where, "topic"), "missing: produce needs a topic")
        if "partition" in args and args["partition"] >= declared.partitions:
            raise r.fail(
                raw["partition"][1],
                join_field(where, "partition"),
                f"partition {args['partition']} is out of range: {declared.name} has {declared.partitions} partition(s), 0..{declared.partitions - 1}",
            )
        if "from" in args:
            clash = [k for k in ("key", "value", "partition") if k in args]
            if clash:
                raise r.fail(
                    raw[clash[0]][0],
                    join_field(where, clash[0]),
                    "with from: the records keep the consumed key, value and partition number; remove it",
                )
        elif "value" not in args:
            raise r.fail(node, join_field(where, "value"), "missing: produce needs a value (or from: CONSUMER)")
    if spec.kind == PRODUCER and action == "send_offsets_to_transaction" and "consumer" not in args:
        raise r.fail(node, join_field(where, "consumer"), "missing: whose offsets? consumer: NAME")
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
        what = "a duration such as 61s, 500ms or 2m" if actor == "clock" else f"a broker id, 1..{cluster.brokers}"
        raise r.fail(label_node, where, f"missing: {label} needs {what}")
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
                f"unknown argument {name!r}{did_you_mean(name, allowed)}; {label} takes {' or '.join(allowed)} and expect",
            )
        if name == "ms":
            args["ms"] = _duration(r, value_node, at, bare_number_ok=not scalar_form)
        elif name == "broker":
            args["broker"] = r.integer(value_node, at, 1)
            if args["broker"] > cluster.brokers:
                raise r.fail(
                    value_node,
                    at,
                    f"broker {args['broker']} is out of range: the cluster has brokers 1..{cluster.brokers}",
                )
        elif name == "coordinator_of":
            txid = r.string(value_node, at)
            declared = sorted({a.transactional_id for a in actors.values() if a.transactional_id})
            if txid not in declared:
                raise r.fail(value_node, at, unknown_name("transactional.id", txid, declared, "declared"))
            args[name] = txid
        else:  # leader_of
            args[name] = _parse_tp(r, value_node, at, cluster)
    if len(args) != 1:
        raise r.fail(node, where, f"{label} takes exactly one of {' or '.join(allowed)}")
    return args, expect, predict


def _abort_args(
    r: Reader, node: yaml.Node | None, label_node: yaml.Node, where: str, cluster: ClusterSpec
) -> tuple[dict[str, Any], StepExpect, dict[str, Any] | None]:
    """`broker.abort_transaction: payments-0` or `{partition: payments-0}`: an operator aborts the transaction open on
    that partition that started first (`kafka-transactions.sh abort --start-offset`, playground/sim/adminabort.py)."""
    if node is None:
        raise r.fail(label_node, where, "missing: broker.abort_transaction needs the partition, e.g. payments-0")
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
                f"unknown argument {name!r}; broker.abort_transaction takes partition and expect",
            )
    if "partition" not in raw:
        raise r.fail(node, join_field(where, "partition"), "missing: which partition? partition: TOPIC-PARTITION")
    return {"partition": _parse_tp(r, raw["partition"][1], join_field(where, "partition"), cluster)}, expect, predict


def _late_write_args(
    r: Reader, node: yaml.Node | None, label_node: yaml.Node, where: str, actors: dict[str, ActorSpec]
) -> tuple[dict[str, Any], StepExpect, dict[str, Any] | None]:
    """`net.late_write: {actor: P, of: a-1, value: a-2}` (key: optional): a Produce request of P's earlier
    transaction, held back by the network, reaches the leader now. `of` names a record P wrote in that transaction:
    the late batch carries its producer id and epoch, goes to its partition, with P's transactional.id."""
    usage = "net.late_write needs {actor: PRODUCER, of: EARLIER-RECORD-VALUE, value: VALUE} (key: optional)"
    if node is None:
        raise r.fail(label_node, where, f"missing: {usage}")
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
                f"unknown argument {name!r}{did_you_mean(name, allowed)}; net.late_write takes {', '.join(allowed)} and expect",
            )
        if name == "actor":
            who = r.string(value_node, at)
            producers = [a.name for a in actors.values() if a.kind == PRODUCER and a.transactional_id]
            if who not in producers:
                raise r.fail(value_node, at, unknown_name("transactional producer", who, producers))
            args[name] = who
        else:
            args[name] = r.string(value_node, at, non_empty=name != "key")
    for name in ("actor", "of", "value"):
        if name not in args:
            raise r.fail(node, join_field(where, name), f"missing: {usage}")
    return args, expect, predict


def _duration(r: Reader, node: yaml.Node, where: str, bare_number_ok: bool) -> int:
    """`61s`, `500ms`, `2m`, `1h` -> milliseconds. A bare number is ambiguous (seconds? ms?) except in the
    mapping form `{ms: N}`, which names its unit."""
    if bare_number_ok and isinstance(node, yaml.ScalarNode) and INT.match(node.value):
        return r.integer(node, where, 1)
    text = node.value.strip() if isinstance(node, yaml.ScalarNode) else None
    match = _DURATION.match(text or "")
    if match and len(match.group(1).lstrip("0")) > 12:  # more than 30 years in ms: past any clock.advance bound
        raise r.fail(node, where, f"{match.group(0)[:24]}... is longer than any clock may advance")
    if not match or int(match.group(1)) <= 0:
        raise r.fail(node, where, f"expected a positive duration such as 61s, 500ms or 2m, got {r.describe(node)}")
    return int(match.group(1)) * _DURATION_MS[match.group(2)]


def _parse_tp(
    r: Reader, key_node: yaml.Node, where: str, cluster: ClusterSpec, topics: tuple[str, ...] | None = None
) -> str:
    """`orders-0`: a declared topic and a partition in range (topic names may contain dashes: split at the last)."""
    name = r.string(key_node, where)
    topic, dash, number = name.rpartition("-")
    if not dash or not (number.isascii() and number.isdigit()) or len(number) > 9:
        raise r.fail(key_node, where, f"{name!r} is not TOPIC-PARTITION (e.g. orders-0)")
    spec = cluster.topic(topic)
    if spec is None:
        raise r.fail(key_node, where, unknown_name("topic", topic, (t.name for t in cluster.topics)))
    if int(number) >= spec.partitions:
        raise r.fail(
            key_node,
            where,
            f"partition {int(number)} is out of range: {topic} has {spec.partitions} partition(s), 0..{spec.partitions - 1}",
        )
    if topics is not None and topic not in topics:
        raise r.fail(key_node, where, f"this consumer reads {', '.join(topics)}, not {topic}")
    return f"{topic}-{int(number)}"


def _parse_expect(
    r: Reader, node: yaml.Node, cluster: ClusterSpec, actors: dict[str, ActorSpec], section: str = "expect"
) -> tuple[dict[str, Any], dict[str, int]]:
    """An `expect:` block (or a `goal:`, which has the same keys): what must be observed, and the line of each check."""
    expect: dict[str, Any] = {}
    lines: dict[str, int] = {}
    blocks = r.mapping(node, section)
    keys = (*EXPECT_KEYS, BY_PROFILE) if section == "expect" else EXPECT_KEYS  # by_profile: only in expect, one level
    for key, (key_node, _) in blocks.items():
        if key not in keys:
            r.errors.append(r.fail(key_node, join_field(section, key), unknown_name("expectation", key, keys)))
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
                    unknown_name("consumer", name, [a.name for a in actors.values() if a.kind == CONSUMER]),
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
                        unknown_name("key", mark, ("high_watermark", "last_stable_offset")),
                    )
                marks[mark] = r.integer(value_node, join_field(at, mark), 0)
            if not marks:
                raise r.fail(marks_node, at, "name high_watermark and/or last_stable_offset")
            expect["watermarks"][tp] = marks
            lines[f"watermarks.{tp}"] = tp_node.start_mark.line + 1

    def transactions_block() -> None:
        expect["transactions"] = {}
        declared = sorted({a.transactional_id for a in actors.values() if a.transactional_id})
        for txid, (txid_node, state_node) in r.mapping(blocks["transactions"][1], f"{section}.transactions").items():
            at = join_field(f"{section}.transactions", txid)
            if txid not in declared:
                raise r.fail(txid_node, at, unknown_name("transactional.id", txid, declared, "declared"))
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
                            v_node, join_field(at, key), unknown_name("transaction state", state, TXN_STATES, "states")
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
                            f"expected a normalised producer id such as P1, got {producer!r}",
                        )
                    want["producer"] = producer
                else:
                    raise r.fail(k_node, join_field(at, key), unknown_name("key", key, ("state", "epoch", "producer")))
            if not want:
                raise r.fail(state_node, at, "name state, epoch and/or producer")
            expect["transactions"][txid] = want
            lines[f"transactions.{txid}"] = txid_node.start_mark.line + 1

    def groups_block() -> None:
        expect["groups"] = {}
        groups = sorted({a.group_id for a in actors.values() if a.group_id})
        for group, (group_node, tps_node) in r.mapping(blocks["groups"][1], f"{section}.groups").items():
            at = join_field(f"{section}.groups", group)
            if group not in groups:
                raise r.fail(group_node, at, unknown_name("group", group, groups))
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
                raise r.fail(n, join_field(at, i), unknown_name("anomaly rule", name, RULES, "rules"))
            names.append(name)
        expect["anomalies"] = sorted(set(names))
        lines["anomalies"] = blocks["anomalies"][0].start_mark.line + 1

    def producers_block() -> None:
        expect["producers"] = {}
        producers = [a.name for a in actors.values() if a.kind == PRODUCER]
        for name, (name_node, state_node) in r.mapping(blocks["producers"][1], f"{section}.producers").items():
            at = join_field(f"{section}.producers", name)
            if name not in producers:
                raise r.fail(name_node, at, unknown_name("producer", name, producers))
            want = {}
            for key, (k_node, v_node) in r.mapping(state_node, at).items():
                if key != "state":
                    raise r.fail(k_node, join_field(at, key), unknown_name("key", key, ("state",)))
                state = r.string(v_node, join_field(at, key))
                if state not in CLIENT_STATES:
                    raise r.fail(v_node, join_field(at, key), unknown_name("client state", state, CLIENT_STATES))
                want["state"] = state
            if not want:
                raise r.fail(state_node, at, "name the client's state")
            expect["producers"][name] = want
            lines[f"producers.{name}"] = name_node.start_mark.line + 1

    def callbacks_block() -> None:
        expect["callbacks"] = {}
        producers = [a.name for a in actors.values() if a.kind == PRODUCER]
        for name, (name_node, values_node) in r.mapping(blocks["callbacks"][1], f"{section}.callbacks").items():
            at = join_field(f"{section}.callbacks", name)
            if name not in producers:
                raise r.fail(name_node, at, unknown_name("producer", name, producers))
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
                        "profile key",
                        selector,
                        PROFILE_SELECTORS,
                        "keys: a profile, a client release, a client or a Kafka version",
                    ),
                )
            )
            continue
        block, lines = _parse_expect(r, block_node, cluster, actors, where)
        if not block:
            if not r.mapping(block_node, where):
                r.errors.append(r.fail(block_node, where, "name at least one check (the same keys as expect:)"))
            continue
        out[selector] = (block, lines)
    if not out and not r.mapping(node, at):
        raise r.fail(node, at, "name at least one profile, e.g. by_profile: {java: {transactions: {...}}}")
    expect[BY_PROFILE] = out
