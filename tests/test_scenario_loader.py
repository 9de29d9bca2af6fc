"""Loading and validating scenario files: every bad input names the file, the line and the field."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from playground.engine.spec import Profile
from playground.scenario import ScenarioError, load_library, load_scenario, parse_scenario, pick

PATH = "scenarios/x.yaml"

HEAD = """\
format: 1
id: x
title: {en: A title, zh: 标题}
summary: A summary
cluster:
  topics:
    orders: {partitions: 3}
    audit: {}
actors:
  A: {producer: {transactional.id: order-pay}}
  B: {producer: {transactional.id: order-pay}}
  plain: {producer: {}}
  rc: {consumer: {topics: [orders]}}
  in: {consumer: {group.id: copier, isolation.level: read_uncommitted, topics: [orders, audit]}}
"""


def scenario_text(steps="  - A.init_transactions\n", expect="", head=HEAD):
    return head + "steps:\n" + steps + (("expect:\n" + expect) if expect else "")


def parse(text):
    return parse_scenario(text, PATH)


def error_of(text):
    with pytest.raises(ScenarioError) as info:
        parse(text)
    return info.value


def line_of(text, fragment):
    return next(n for n, line in enumerate(text.splitlines(), 1) if fragment in line)


def assert_error(text, fragment, field, *words):
    """The error is on the line containing `fragment`, names `field`, and its message contains `words`."""
    error = error_of(text)
    line = line_of(text, fragment)
    assert str(error).startswith(f"{PATH}:{line}: {field}: "), str(error)
    for word in words:
        assert word in error.message, str(error)
    return error


# --- a valid file -----------------------------------------------------------------------------------------


def test_it_parses_the_contract_example_into_specs_and_steps():
    text = scenario_text(
        """\
  - A.init_transactions
  - A.begin_transaction
  - A.produce: {topic: orders, partition: 0, value: txn1-p0}
  - note: {en: "B starts with the same transactional.id", zh: "B 用同一个 transactional.id 启动"}
  - B.init_transactions
  - A.commit_transaction: {expect: _FENCED}
  - rc.poll
""",
        expect="""\
  consumers:
    rc: {orders-0: []}
  logs:
    orders-0: [txn1-p0, ABORT]
  transactions:
    order-pay: {state: Empty, epoch: 2}
""",
    )
    scenario = parse(text)
    assert scenario.id == "x" and scenario.format == 1 and scenario.seed == 0
    assert scenario.cluster.brokers == 3
    assert [(t.name, t.partitions) for t in scenario.cluster.topics] == [("orders", 3), ("audit", 1)]
    assert [s.label for s in scenario.steps] == [
        "A.init_transactions",
        "A.begin_transaction",
        "A.produce",
        "note",
        "B.init_transactions",
        "A.commit_transaction",
        "rc.poll",
    ]
    produce = scenario.steps[2]
    assert produce.args == {"topic": "orders", "partition": 0, "value": "txn1-p0"}
    assert produce.index == 2 and produce.line == line_of(text, "A.produce")
    assert scenario.steps[3].args == {
        "text": {"en": "B starts with the same transactional.id", "zh": "B 用同一个 transactional.id 启动"}
    }
    assert scenario.steps[5].expect == ("_FENCED",)
    assert scenario.expect["logs"] == {"orders-0": ["txn1-p0", "ABORT"]}
    assert scenario.expect["transactions"] == {"order-pay": {"state": "Empty", "epoch": 2}}
    assert scenario.expect_lines["logs.orders-0"] == line_of(text, "orders-0: [txn1-p0")


def test_it_gives_consumers_librdkafkas_read_committed_default_and_producers_idempotence():
    scenario = parse(scenario_text())
    assert scenario.actors["rc"].config["isolation.level"] == "read_committed"
    assert scenario.actors["in"].config["isolation.level"] == "read_uncommitted"
    assert scenario.actors["in"].topics == ("orders", "audit")
    assert scenario.actors["plain"].config == {"enable.idempotence": True}
    assert scenario.actors["A"].transactional_id == "order-pay"


def test_it_keeps_yaml_1_1_booleans_and_numbers_as_the_text_written():
    scenario = parse(
        scenario_text(
            "  - plain.produce: {topic: orders, key: 010, value: no}\n  - plain.produce: {topic: orders, key: yes, value: 1e3}\n  - plain.produce: {topic: orders, value: ~}\n"
        )
    )
    assert scenario.steps[0].args == {"topic": "orders", "key": "010", "value": "no"}
    assert scenario.steps[1].args == {"topic": "orders", "key": "yes", "value": "1e3"}
    assert scenario.steps[2].args == {"topic": "orders", "value": "~"}


def test_it_keeps_yaml_1_1_lookalikes_as_text_in_expectations_too():
    text = scenario_text(
        expect="  logs:\n    orders-0: [no, 010, 1e3, off]\n  consumers:\n    rc: {orders-1: [on, 0x1f]}\n"
    )
    scenario = parse(text)
    assert scenario.expect["logs"]["orders-0"] == ["no", "010", "1e3", "off"]
    assert scenario.expect["consumers"]["rc"]["orders-1"] == ["on", "0x1f"]


def test_it_reads_integers_as_decimal_even_with_a_leading_zero():
    scenario = parse(scenario_text("  - A.produce: {topic: orders, partition: 02, value: v}\n").replace("seed", "seed"))
    assert scenario.steps[0].args["partition"] == 2


def test_it_converts_clock_durations_to_milliseconds():
    scenario = parse(
        scenario_text(
            "  - clock.advance: 61s\n  - clock.advance: 500ms\n  - clock.advance: 2m\n  - clock.advance: 192h\n  - clock.advance: {ms: 1500}\n"
        )
    )
    assert [s.args for s in scenario.steps] == [
        {"ms": 61000},
        {"ms": 500},
        {"ms": 120000},
        {"ms": 691200000},
        {"ms": 1500},
    ]


def test_it_reads_broker_steps_and_the_coordinator_of_and_leader_of_extensions():
    scenario = parse(
        scenario_text(
            "  - broker.stop: 2\n  - broker.start: {broker: 2}\n  - broker.stop: {coordinator_of: order-pay, expect: ok}\n  - broker.stop: {leader_of: orders-2}\n"
        )
    )
    assert [(s.label, dict(s.args), s.expect) for s in scenario.steps] == [
        ("broker.stop", {"broker": 2}, None),
        ("broker.start", {"broker": 2}, None),
        ("broker.stop", {"coordinator_of": "order-pay"}, ("ok",)),
        ("broker.stop", {"leader_of": "orders-2"}, None),
    ]


def test_it_loads_again_what_step_to_dict_writes():
    scenario = parse(
        scenario_text(
            "  - clock.advance: 61s\n  - broker.stop: 3\n  - note: hello\n  - A.commit_transaction: {expect: [_FENCED, ok]}\n  - in.poll: {max: 2}\n"
        )
    )
    import yaml

    again = parse(
        scenario_text(textwrap.indent(yaml.safe_dump([s.to_dict() for s in scenario.steps], allow_unicode=True), "  "))
    )
    assert [(s.actor, s.action, dict(s.args), s.expect) for s in again.steps] == [
        (s.actor, s.action, dict(s.args), s.expect) for s in scenario.steps
    ]


def test_it_treats_a_plain_string_title_as_english_and_falls_back_to_english():
    scenario = parse(scenario_text().replace("title: {en: A title, zh: 标题}", "title: Only English"))
    assert scenario.title == {"en": "Only English"}
    assert scenario.text("title", "zh") == "Only English"
    assert parse(scenario_text()).text("title", "zh") == "标题"
    assert pick({"en": "hello", "zh": "你好"}, "fr") == "hello"


def test_it_accepts_a_list_of_acceptable_outcomes():
    scenario = parse(scenario_text("  - A.produce: {topic: orders, value: v, expect: [ok, INVALID_PRODUCER_EPOCH]}\n"))
    assert scenario.steps[0].expect == ("ok", "INVALID_PRODUCER_EPOCH")


def test_it_accepts_null_committed_offsets_in_group_expectations():
    scenario = parse(scenario_text(expect="  groups:\n    copier: {orders-0: null, orders-1: ~, orders-2: 4}\n"))
    assert scenario.expect["groups"] == {"copier": {"orders-0": None, "orders-1": None, "orders-2": 4}}


# --- bad input: one test per kind, each naming file, line and field ------------------------------------------


def test_it_names_an_unknown_actor_and_lists_the_declared_ones():
    text = scenario_text(
        "  - A.init_transactions\n  - A.begin_transaction\n  - A.produce: {topic: orders, value: v}\n  - C.produce: {topic: orders, value: v}\n"
    )
    error = assert_error(text, "C.produce", "steps[3].C.produce", "unknown actor 'C'", "(actors: A, B, plain, rc, in)")
    assert (
        str(error)
        == f"{PATH}:{line_of(text, 'C.produce')}: steps[3].C.produce: unknown actor 'C' (actors: A, B, plain, rc, in)"
    )


def test_it_names_an_action_the_actors_kind_does_not_have():
    assert_error(
        scenario_text("  - rc.commit_transaction\n"),
        "rc.commit_transaction",
        "steps[0].rc.commit_transaction",
        "unknown action 'commit_transaction' for consumer 'rc'",
        "poll",
    )


def test_it_suggests_the_action_that_was_probably_meant():
    assert_error(
        scenario_text("  - A.comit_transaction\n"),
        "A.comit_transaction",
        "steps[0].A.comit_transaction",
        "did you mean 'commit_transaction'",
    )


def test_it_names_an_unknown_cluster_action():
    assert_error(
        scenario_text("  - broker.restart: 2\n"),
        "broker.restart",
        "steps[0].broker.restart",
        "unknown action 'restart' for broker",
    )


def test_it_names_a_step_that_is_not_actor_dot_action():
    assert_error(scenario_text("  - init_transactions\n"), "  - init_transactions", "steps[0]", "not ACTOR.ACTION")


def test_it_names_a_wrong_argument_name():
    text = scenario_text("  - A.produce:\n      topic: orders\n      vaule: v\n")
    assert_error(text, "vaule", "steps[0].A.produce.vaule", "unknown argument 'vaule'", "did you mean 'value'")


def test_it_names_an_argument_given_to_an_action_that_takes_none():
    assert_error(
        scenario_text("  - A.commit_transaction: {timeout: 5}\n"),
        "A.commit",
        "steps[0].A.commit_transaction.timeout",
        "takes no argument",
    )


def test_it_names_a_wrong_type():
    text = scenario_text("  - A.produce:\n      topic: orders\n      partition: first\n      value: v\n")
    assert_error(text, "partition: first", "steps[0].A.produce.partition", "expected a whole number", "'first'")


def test_it_names_a_boolean_argument_that_is_not_true_or_false():
    text = scenario_text("  - A.produce:\n      topic: orders\n      value: v\n      await: no\n")
    assert_error(text, "await: no", "steps[0].A.produce.await", "expected true or false")


def test_it_names_a_mapping_where_text_was_expected():
    text = scenario_text("  - A.produce:\n      topic: orders\n      value: {a: 1}\n")
    assert_error(text, "value: {a: 1}", "steps[0].A.produce.value", "expected text, got a mapping")


def test_it_names_an_undeclared_topic_in_a_step():
    text = scenario_text("  - A.produce:\n      topic: payments\n      value: v\n")
    assert_error(text, "topic: payments", "steps[0].A.produce.topic", "unknown topic 'payments'", "orders, audit")


def test_it_names_an_undeclared_topic_a_consumer_reads():
    text = HEAD.replace("rc: {consumer: {topics: [orders]}}", "rc: {consumer: {topics: [orders, payments]}}")
    assert_error(scenario_text(head=text), "payments", "actors.rc.consumer.topics[1]", "unknown topic 'payments'")


def test_it_names_a_consumer_without_topics():
    text = HEAD.replace("rc: {consumer: {topics: [orders]}}", "rc: {consumer: {isolation.level: read_committed}}")
    assert_error(
        scenario_text(head=text), "rc: {consumer", "actors.rc.consumer.topics", "a consumer names the topics it reads"
    )


def test_it_reads_group_instance_id_and_lets_two_consumers_share_one():
    text = HEAD.replace(
        "rc: {consumer: {topics: [orders]}}",
        "rc: {consumer: {group.id: billing, group.instance.id: billing-1, topics: [orders]}}\n"
        "  rc2: {consumer: {group.id: billing, group.instance.id: billing-1, topics: [orders]}}",
    )
    scenario = parse(scenario_text(head=text))
    assert scenario.actors["rc"].config["group.instance.id"] == scenario.actors["rc2"].config["group.instance.id"]
    assert scenario.actors["rc"].config["group.id"] == "billing"


def test_it_names_a_static_member_without_a_group():
    text = HEAD.replace(
        "rc: {consumer: {topics: [orders]}}", "rc: {consumer: {group.instance.id: i-1, topics: [orders]}}"
    )
    assert_error(scenario_text(head=text), "i-1", "actors.rc.consumer.group.instance.id", "give it a group.id")


@pytest.mark.parametrize("instance", ["billing 1", "..", "x" * 250, "'billing/1'"])
def test_it_names_a_group_instance_id_kafka_refuses(instance):
    text = HEAD.replace(
        "rc: {consumer: {topics: [orders]}}",
        f"rc: {{consumer: {{group.id: g, group.instance.id: {instance}, topics: [orders]}}}}",
    )
    assert_error(scenario_text(head=text), "group.instance.id", "actors.rc.consumer.group.instance.id", "not a valid")


def test_it_names_a_partition_out_of_range():
    text = scenario_text("  - A.produce: {topic: orders, partition: 3, value: v}\n")
    assert_error(
        text, "partition: 3", "steps[0].A.produce.partition", "out of range", "orders has 3 partition(s), 0..2"
    )


def test_it_names_an_unknown_consumer_in_from():
    text = scenario_text("  - A.produce: {topic: orders, from: B}\n")
    assert_error(text, "from: B", "steps[0].A.produce.from", "unknown consumer 'B'", "rc, in")


def test_it_names_an_unknown_consumer_in_send_offsets():
    text = scenario_text("  - A.send_offsets_to_transaction: {consumer: reader}\n")
    assert_error(
        text, "consumer: reader", "steps[0].A.send_offsets_to_transaction.consumer", "unknown consumer 'reader'"
    )


def test_it_names_a_consumer_without_a_group_in_send_offsets():
    text = scenario_text("  - A.send_offsets_to_transaction: {consumer: rc}\n")
    assert_error(text, "consumer: rc", "steps[0].A.send_offsets_to_transaction.consumer", "has no group.id")


def test_it_names_a_duplicate_actor():
    text = HEAD + "  A: {producer: {}}\n" + "steps:\n  - A.init_transactions\n"
    error = assert_error(text, "  A: {producer: {}}", "actors.A", "duplicate key 'A'")
    assert f"first on line {line_of(text, 'A: {producer: {transactional')}" in error.message


def test_it_names_a_bad_duration():
    for bad in ("61", "61 seconds", "-5s", "soon"):
        assert_error(
            scenario_text(f"  - clock.advance: {bad}\n"),
            "clock.advance",
            "steps[0].clock.advance",
            "duration such as 61s",
        )


def test_it_names_a_broker_id_out_of_range():
    assert_error(
        scenario_text("  - broker.stop: 4\n"), "broker.stop", "steps[0].broker.stop", "broker 4 is out of range", "1..3"
    )
    assert_error(scenario_text("  - broker.start: 0\n"), "broker.start", "steps[0].broker.start", "at least 1")


def test_it_names_an_unknown_transactional_id_in_coordinator_of():
    text = scenario_text("  - broker.stop: {coordinator_of: nobody}\n")
    assert_error(
        text, "coordinator_of", "steps[0].broker.stop.coordinator_of", "unknown transactional.id 'nobody'", "order-pay"
    )


def test_it_names_a_bad_partition_in_leader_of_and_a_broker_step_with_two_targets():
    assert_error(
        scenario_text("  - broker.stop: {leader_of: orders-9}\n"),
        "leader_of",
        "steps[0].broker.stop.leader_of",
        "out of range",
    )
    assert_error(
        scenario_text("  - broker.start: {leader_of: orders-0}\n"),
        "leader_of",
        "steps[0].broker.start.leader_of",
        "unknown argument 'leader_of'",
    )
    assert_error(
        scenario_text("  - broker.stop: {broker: 1, leader_of: orders-0}\n"),
        "broker.stop",
        "steps[0].broker.stop",
        "exactly one of",
    )


def test_it_names_an_unknown_outcome_in_a_step_expect():
    text = scenario_text("  - A.commit_transaction: {expect: FENCED}\n")
    assert_error(
        text, "A.commit", "steps[0].A.commit_transaction.expect", "unknown outcome 'FENCED'", "did you mean '_FENCED'"
    )


def test_it_names_an_unknown_outcome_inside_a_list():
    text = scenario_text("  - A.commit_transaction:\n      expect:\n        - ok\n        - _FENCD\n")
    assert_error(text, "_FENCD", "steps[0].A.commit_transaction.expect", "unknown outcome '_FENCD'")


def test_it_names_an_unknown_expectation_block_key():
    text = scenario_text(expect="  logs:\n    orders-0: []\n  offsets:\n    copier: {}\n")
    assert_error(
        text,
        "offsets:",
        "expect.offsets",
        "unknown expectation 'offsets'",
        "consumers, logs, watermarks, transactions, groups",
    )


def test_it_names_a_bad_topic_partition_in_expectations():
    assert_error(
        scenario_text(expect="  logs:\n    orders-7: []\n"), "orders-7", "expect.logs.orders-7", "out of range"
    )
    assert_error(
        scenario_text(expect="  logs:\n    payments-0: []\n"),
        "payments-0",
        "expect.logs.payments-0",
        "unknown topic 'payments'",
    )
    assert_error(
        scenario_text(expect="  logs:\n    orders: []\n"), "orders: []", "expect.logs.orders", "not TOPIC-PARTITION"
    )


def test_it_names_an_expected_consumer_partition_the_consumer_does_not_read():
    assert_error(
        scenario_text(expect="  consumers:\n    rc: {audit-0: []}\n"),
        "rc: {audit-0",
        "expect.consumers.rc.audit-0",
        "reads orders, not audit",
    )


def test_it_names_an_unknown_transaction_state_and_field():
    assert_error(
        scenario_text(expect="  transactions:\n    order-pay: {state: Committed}\n"),
        "{state: Committed}",
        "expect.transactions.order-pay.state",
        "unknown transaction state 'Committed'",
        "CompleteCommit",
    )
    assert_error(
        scenario_text(expect="  transactions:\n    order-pay: {pid: 1000}\n"),
        "{pid: 1000}",
        "expect.transactions.order-pay.pid",
        "unknown key 'pid'",
    )
    assert_error(
        scenario_text(expect="  transactions:\n    other: {state: Empty}\n"),
        "other:",
        "expect.transactions.other",
        "unknown transactional.id 'other'",
    )


def test_it_names_a_bad_watermark_and_an_unknown_group():
    assert_error(
        scenario_text(expect="  watermarks:\n    orders-0: {lso: 3}\n"),
        "{lso: 3}",
        "expect.watermarks.orders-0.lso",
        "unknown key 'lso'",
        "last_stable_offset",
    )
    assert_error(
        scenario_text(expect="  groups:\n    other: {orders-0: 1}\n"),
        "other:",
        "expect.groups.other",
        "unknown group 'other'",
        "copier",
    )


def test_it_names_an_unknown_top_level_key():
    text = scenario_text().replace("summary: A summary", "sumary: A summary")
    assert_error(text, "sumary", "sumary", "unknown top-level key 'sumary'", "did you mean 'summary'")


def test_it_refuses_a_format_other_than_1():
    text = scenario_text().replace("format: 1", "format: 2")
    assert_error(text, "format: 2", "format", "reads format 1, not 2")


@pytest.mark.parametrize("key", ["format", "id", "title", "actors", "steps"])
def test_it_names_a_missing_required_field(key):
    text = scenario_text()
    lines = text.splitlines(keepends=True)
    start = line_of(text, f"{key}:") - 1
    end = start + 1
    while end < len(lines) and lines[end].startswith(" "):
        end += 1
    error = error_of("".join(lines[:start] + lines[end:]))
    assert error.field == key and "missing (required)" in error.message and error.path == PATH and error.line == 1


def test_it_names_a_missing_required_argument():
    assert_error(
        scenario_text("  - A.produce: {value: v}\n"), "A.produce", "steps[0].A.produce.topic", "produce needs a topic"
    )
    assert_error(
        scenario_text("  - A.produce: {topic: orders}\n"), "A.produce", "steps[0].A.produce.value", "needs a value"
    )


def test_it_names_an_unknown_client_setting_and_a_bad_isolation_level():
    text = HEAD.replace("{transactional.id: order-pay}}\n  B", "{transactional.idd: order-pay}}\n  B")
    assert_error(
        scenario_text(head=text),
        "transactional.idd",
        "actors.A.producer.transactional.idd",
        "unknown setting",
        "did you mean 'transactional.id'",
    )
    text = HEAD.replace("isolation.level: read_uncommitted", "isolation.level: uncommitted")
    assert_error(
        scenario_text(head=text),
        "uncommitted",
        "actors.in.consumer.isolation.level",
        "not one of read_committed, read_uncommitted",
    )


def test_it_names_an_unknown_cluster_setting():
    text = HEAD.replace("cluster:\n", "cluster:\n  config:\n    transaction.timeout: 1000\n")
    assert_error(
        scenario_text(head=text),
        "transaction.timeout:",
        "cluster.config.transaction.timeout",
        "unknown setting",
        "transaction.timeout.ms",
    )


def test_it_names_an_actor_with_two_kinds_or_a_reserved_name():
    text = HEAD.replace("plain: {producer: {}}", "plain: {producer: {}, consumer: {topics: [orders]}}")
    assert_error(scenario_text(head=text), "plain:", "actors.plain", "exactly one of producer")
    text = HEAD.replace("plain: {producer: {}}", "clock: {producer: {}}")
    assert_error(scenario_text(head=text), "clock:", "actors.clock", "reserved")


def test_it_names_a_step_with_two_keys():
    text = scenario_text("  - A.init_transactions: {}\n    note: hello\n")
    assert_error(text, "A.init_transactions", "steps[0]", "a step is one ACTOR.ACTION")


def test_it_names_a_yaml_syntax_error_with_its_line():
    text = scenario_text("  - A.produce: {topic: orders, value: [unclosed\n  - A.commit_transaction\n")
    error = error_of(text)
    assert error.path == PATH and error.field == "yaml" and error.line >= line_of(text, "A.produce")


def test_it_names_a_duplicate_scenario_id_in_a_library(tmp_path):
    (tmp_path / "01-a.yaml").write_text(scenario_text(), encoding="utf-8")
    (tmp_path / "02-b.yaml").write_text(scenario_text(), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_library(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / '02-b.yaml'}:2: id: 'x' is also the id of")


def test_it_loads_a_library_in_file_name_order(tmp_path):
    (tmp_path / "02-b.yaml").write_text(scenario_text().replace("id: x", "id: b"), encoding="utf-8")
    (tmp_path / "01-a.yaml").write_text(scenario_text().replace("id: x", "id: a"), encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a scenario", encoding="utf-8")
    assert [s.id for s in load_library(tmp_path)] == ["a", "b"]
    assert load_scenario(tmp_path / "01-a.yaml").path == str(tmp_path / "01-a.yaml")


def test_it_does_not_import_django():
    code = "import sys, playground.scenario; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1]).returncode == 0


# --- profile: which Kafka and which client ------------------------------------------------------------------


def test_it_reads_no_profile_as_kafka_3_9_with_librdkafka_as_every_file_always_meant():
    assert parse(scenario_text()).profile == Profile("3.9", "librdkafka")


def test_it_reads_a_profile_of_kafka_4_and_of_the_java_client():
    assert parse(scenario_text(head=HEAD + 'profile: {kafka: "4", client: java}\n')).profile == Profile("4", "java")
    assert parse(scenario_text(head=HEAD + "profile:\n  kafka: 4\n")).profile == Profile("4", "librdkafka")
    assert parse(scenario_text(head=HEAD + "profile: {client: librdkafka, kafka: 3.9}\n")).profile == Profile("3.9")


def test_it_names_the_line_of_a_kafka_version_it_does_not_have():
    text = scenario_text(head=HEAD + "profile:\n  client: java\n  kafka: 4.0\n")
    assert_error(text, "kafka: 4.0", "profile.kafka", "'4.0'", "3.9 (Kafka 3.9.1)", "4 (Kafka 4.4.0)")


def test_it_names_the_line_of_an_unknown_client_and_suggests_the_likely_one():
    assert_error(
        scenario_text(head=HEAD + "profile: {client: librdkafk}\n"),
        "profile:",
        "profile.client",
        "unknown client 'librdkafk'",
        "librdkafka, java",
        "did you mean 'librdkafka'",
    )


def test_it_names_the_line_of_an_unknown_profile_key_and_of_a_profile_that_is_not_a_mapping():
    text = scenario_text(head=HEAD + "profile:\n  kafka: 4\n  version: 4\n")
    assert_error(text, "version: 4", "profile.version", "unknown key 'version'", "kafka, client")
    assert_error(scenario_text(head=HEAD + "profile: 4\n"), "profile: 4", "profile", "expected a mapping")


# --------------------------------------------------------------------------------------------------------------
# Outcomes per profile (docs/scenario-format.md, "Outcomes per profile")

PER_PROFILE_STEPS = """\
  - A.init_transactions
  - B.init_transactions
  - A.commit_transaction: {expect: {librdkafka: _FENCED, java: ProducerFencedException, 4-java: InvalidProducerEpochException}}
  - A.abort_transaction: {expect: {default: ok, "4": [_FENCED, _STATE], 3.9-java: IllegalStateException}}
  - A.begin_transaction: {expect: _FATAL}
"""
PER_PROFILE_EXPECT = """\
  logs:
    orders-0: [ABORT]
  transactions:
    order-pay: {state: Empty, epoch: 2}
  by_profile:
    java:
      logs:
        orders-0: [ABORT, COMMIT]
    4-java:
      transactions:
        order-pay: {state: Empty, epoch: 3}
      anomalies: [lost-write]
"""


def test_it_reads_a_steps_outcomes_per_profile_most_specific_first():
    scenario = parse(scenario_text(PER_PROFILE_STEPS, PER_PROFILE_EXPECT))
    outcomes = {
        key: [s.expect for s in scenario.for_profile(Profile(*key.split("-"))).steps][2:]
        for key in ("3.9-librdkafka", "3.9-java", "4-librdkafka", "4-java")
    }
    assert outcomes == {
        "3.9-librdkafka": [("_FENCED",), ("ok",), ("_FATAL",)],
        "3.9-java": [("ProducerFencedException",), ("IllegalStateException",), ("_FATAL",)],  # client over default
        "4-librdkafka": [("_FENCED",), ("_FENCED", "_STATE"), ("_FATAL",)],  # Kafka version over default
        "4-java": [("InvalidProducerEpochException",), ("_FENCED", "_STATE"), ("_FATAL",)],  # whole profile over client
    }
    # the scenario as loaded is resolved for its own profile (the default here), and a step writes that back
    assert scenario.steps[2].expect == ("_FENCED",)
    assert scenario.steps[2].to_dict() == {"A.commit_transaction": {"expect": "_FENCED"}}
    assert scenario.for_profile(scenario.profile) is scenario


def test_it_resolves_the_expect_block_per_profile_check_by_check():
    text = scenario_text(PER_PROFILE_STEPS, PER_PROFILE_EXPECT)
    scenario = parse(text)
    assert scenario.expect == {
        "logs": {"orders-0": ["ABORT"]},
        "transactions": {"order-pay": {"state": "Empty", "epoch": 2}},
    }
    java = scenario.for_profile(Profile("3.9", "java"))
    assert java.expect == {
        "logs": {"orders-0": ["ABORT", "COMMIT"]},
        "transactions": {"order-pay": {"state": "Empty", "epoch": 2}},
    }
    assert java.expect_lines["logs.orders-0"] == line_of(text, "orders-0: [ABORT, COMMIT]")
    v2 = scenario.for_profile(Profile("4", "java"))
    assert v2.expect == {
        "logs": {"orders-0": ["ABORT", "COMMIT"]},
        "transactions": {"order-pay": {"state": "Empty", "epoch": 3}},
        "anomalies": ["lost-write"],
    }
    assert v2.expect_lines["transactions.order-pay"] == line_of(text, "order-pay: {state: Empty, epoch: 3}")
    assert scenario.for_profile(Profile("4", "librdkafka")).expect == scenario.expect
    # a file in another profile is resolved for it when loaded
    own = parse(text.replace("cluster:\n", 'profile: {kafka: "4", client: java}\ncluster:\n', 1))
    assert own.expect == v2.expect and own.steps[2].expect == ("InvalidProducerEpochException",)


@pytest.mark.parametrize(
    ("steps", "expect", "fragment", "field", "words"),
    [
        (
            "  - A.commit_transaction: {expect: {librdkafka: _FENCED, Java: ProducerFencedException}}\n",
            "",
            "A.commit",
            "steps[0].A.commit_transaction.expect.Java",
            ["unknown profile key 'Java'", "3.9-librdkafka", "default", "did you mean 'java'?"],
        ),
        (
            "  - A.commit_transaction: {expect: {librdkafka: _FENCED, 3.9-java: ProducerFencedException}}\n",
            "",
            "A.commit",
            "steps[0].A.commit_transaction.expect",
            ["no outcome for profile 4-java", "4, java, 4-java or default"],
        ),
        (
            "  - A.commit_transaction: {expect: {librdkafka: _FENCED, java: _FENCED}}\n",
            "",
            "A.commit",
            "steps[0].A.commit_transaction.expect.java",
            ["'_FENCED' is a librdkafka outcome", "ProducerFencedException"],
        ),
        (
            "  - A.commit_transaction: {expect: {librdkafka: ProducerFencedException, java: ProducerFencedException}}\n",
            "",
            "A.commit",
            "steps[0].A.commit_transaction.expect.librdkafka",
            ["'ProducerFencedException' is a Java exception"],
        ),
        (
            "  - A.commit_transaction: {expect: {default: ok, java: ProducerFencedExeption}}\n",
            "",
            "A.commit",
            "steps[0].A.commit_transaction.expect.java",
            ["unknown outcome 'ProducerFencedExeption'", "did you mean 'ProducerFencedException'"],
        ),
        (
            "  - A.commit_transaction: {expect: {}}\n",
            "",
            "A.commit",
            "steps[0].A.commit_transaction.expect",
            ["name the outcomes per profile"],
        ),
        (
            "  - A.init_transactions\n",
            "  by_profile:\n    java-4:\n      logs: {orders-0: []}\n",
            "java-4:",
            "expect.by_profile.java-4",
            ["unknown profile key 'java-4'", "4-java"],
        ),
        (
            "  - A.init_transactions\n",
            "  by_profile:\n    default:\n      logs: {orders-0: []}\n",
            "default:",
            "expect.by_profile.default",
            ["unknown profile key 'default'"],
        ),
        (
            "  - A.init_transactions\n",
            "  by_profile:\n    java:\n      log: {orders-0: []}\n",
            "log:",
            "expect.by_profile.java.log",
            ["unknown expectation 'log'", "did you mean 'logs'?"],
        ),
        (
            "  - A.init_transactions\n",
            "  by_profile:\n    java:\n      by_profile: {}\n",
            "by_profile: {}",
            "expect.by_profile.java.by_profile",
            ["unknown expectation 'by_profile'"],
        ),
        (
            "  - A.init_transactions\n",
            "  by_profile:\n    java:\n      transactions: {other: {epoch: 1}}\n",
            "other:",
            "expect.by_profile.java.transactions.other",
            ["unknown transactional.id 'other'"],
        ),
        (
            "  - A.init_transactions\n",
            "  by_profile:\n    java: {}\n",
            "java: {}",
            "expect.by_profile.java",
            ["name at least one check"],
        ),
    ],
)
def test_it_names_file_line_field_and_allowed_keys_of_a_wrong_per_profile_expectation(
    steps, expect, fragment, field, words
):
    assert_error(scenario_text(steps, expect), fragment, field, *words)


def test_it_keeps_by_profile_out_of_a_goal():
    text = scenario_text().replace("steps:\n", "goal:\n  by_profile: {java: {logs: {orders-0: []}}}\nsteps:\n", 1)
    assert_error(text, "by_profile", "goal.by_profile", "unknown expectation 'by_profile'", "logs")


def test_it_reads_a_transactional_id_the_coordinator_must_not_know():
    scenario = parse(scenario_text(expect="  transactions:\n    order-pay: null\n"))
    assert scenario.expect == {"transactions": {"order-pay": None}}


def test_it_round_trips_a_per_profile_step_through_a_sessions_command_log_and_the_writer():
    from playground.scenario.writer import write

    scenario = parse(scenario_text(PER_PROFILE_STEPS, PER_PROFILE_EXPECT)).for_profile(Profile("4", "java"))
    commands = [{"step": s.to_dict(), "outcome": s.expect[0] if s.expect else "ok"} for s in scenario.steps]
    text = write(
        scenario_id="x",
        title={"en": "x"},
        summary=None,
        tags=(),
        seed=0,
        cluster=scenario.cluster,
        actors=scenario.actors.values(),
        commands=commands,
        profile=scenario.profile,
    )
    again = parse(text)
    assert again.profile == Profile("4", "java")
    assert [s.expect for s in again.steps if not s.is_note][2] == ("InvalidProducerEpochException",)


def test_it_gives_its_messages_in_english_and_translatable_by_whoever_shows_them():
    """The loader stays Django-free: a message is English text that remembers its message id and parameters, so the
    web layer can say it in the page's language (here a stand-in catalogue)."""
    import pickle

    from playground.scenario.messages import translated

    with pytest.raises(ScenarioError) as info:
        parse_scenario(scenario_text("  - A.comit_transaction\n"))
    error = info.value
    assert "unknown action 'comit_transaction' for producer 'A'" in str(error)
    catalogue = {
        "action": "ACTION",
        "producer actions": "PRODUCER ACTIONS",
        " for producer %(name)s": " OF PRODUCER %(name)s",
        "; did you mean %(name)s?": "; MEANT %(name)s?",
        "unknown %(what)s %(name)s%(context)s (%(listing)s: %(known)s)%(suggestion)s": "%(what)s? %(name)s%(context)s "
        "[%(listing)s: %(known)s]%(suggestion)s",
    }
    said = error.as_dict(lambda msgid: catalogue.get(msgid, msgid))["message"]
    assert said.startswith("ACTION? 'comit_transaction' OF PRODUCER 'A' [PRODUCER ACTIONS: init_transactions")
    assert said.endswith("; MEANT 'commit_transaction'?")
    again = pickle.loads(pickle.dumps(error.message))
    assert again == error.message and translated(again, lambda m: catalogue.get(m, m)) == said
