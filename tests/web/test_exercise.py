"""Exercises: a goal checked after every command (a checklist that ticks as the session reaches it), hints one at a
time, and a question before a step, answered first, revealed after the step ran. On the simulator and on the
fake backend's observations alike."""

from __future__ import annotations

import pytest

from playground import session
from playground.engine.spec import Profile
from playground.scenario import ScenarioError, exercise, parse_scenario

pytestmark = pytest.mark.django_db

TEXT = """format: 1
id: ex-fence
title: {en: Who is fenced?, zh: 谁被隔离？}
cluster:
  topics:
    orders: {partitions: 1}
actors:
  A: {producer: {transactional.id: shared}}
  B: {producer: {transactional.id: shared}}
  rc: {consumer: {topics: [orders]}}
steps:
  - A.init_transactions
  - A.begin_transaction
  - A.produce: {topic: orders, partition: 0, value: a-1}
  - B.init_transactions:
      predict:
        question: {en: "What happens to A's open transaction?", zh: "A 未完成的事务会怎样？"}
        choices: [{en: it commits, zh: 提交}, {en: it is aborted, zh: 被中止}, {en: nothing, zh: 没变化}]
        answer: 1
  - rc.poll
goal:
  logs: {orders-0: [a-1, ABORT]}
  transactions: {shared: {state: Empty, epoch: 2}}
hints:
  - {en: "Start B with the same transactional.id.", zh: "用同一个 transactional.id 启动 B。"}
  - "Then poll rc."
"""


def _exercise(backend: str = "sim") -> str:
    scenario = parse_scenario(TEXT)
    return session.create(scenario, source=TEXT, backend=backend).id


def test_it_reads_goal_hints_and_predictions_from_the_file():
    s = parse_scenario(TEXT)
    assert s.goal == {
        "logs": {"orders-0": ["a-1", "ABORT"]},
        "transactions": {"shared": {"state": "Empty", "epoch": 2}},
    }
    assert s.hints[1] == {"en": "Then poll rc."} and s.steps[3].predict["answer"] == 1
    assert s.steps[3].to_dict() == "B.init_transactions"  # the question is not part of what the step does


def test_it_reveals_the_right_answer_of_the_sessions_profile_when_the_answer_is_given_per_profile():
    text = TEXT.replace("answer: 1", "answer: {librdkafka: 1, java: 2}")
    scenario = parse_scenario(text)
    assert scenario.steps[3].predict["answer"] == 1  # the file's own profile: Kafka 3.9, librdkafka
    java = session.create(scenario, source=text, profile=Profile("3.9", "java")).id
    assert session.load(java).scenario.steps[3].predict["answer"] == 2
    assert scenario.for_profile(Profile("4", "librdkafka")).steps[3].predict["answer"] == 1


@pytest.mark.parametrize(
    "answer, words",
    [
        ("{librdkafka: 1}", ["no answer for profile 3.9-java", "java", "default"]),
        ("{java: 1, jvm: 2}", ["unknown profile key 'jvm'"]),
        ("{default: 1, java: 7}", ["answer.java"]),
    ],
)
def test_it_refuses_an_answer_per_profile_that_misses_a_profile_or_a_choice(answer, words):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(TEXT.replace("answer: 1", f"answer: {answer}"))
    assert info.value.line > 0
    for word in words:
        assert word in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "bad, needle",
    [
        ("answer: 1", "answer: 3"),
        (
            "choices: [{en: it commits, zh: 提交}, {en: it is aborted, zh: 被中止}, {en: nothing, zh: 没变化}]",
            "choices: [{en: only one}]",
        ),
        ("goal:\n  logs: {orders-0: [a-1, ABORT]}", "goal:\n  logs: {orders-7: [a-1]}"),
        ("hints:\n", "hints: []\n#"),
    ],
)
def test_it_refuses_a_bad_goal_hint_or_question_naming_the_line(bad, needle):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(TEXT.replace(bad, needle))
    assert info.value.line > 0


def test_it_ticks_the_goal_as_the_session_reaches_it():
    sid = _exercise()
    assert [i.ok for i in exercise.goal_items(session.load(sid))] == [False, False]
    for _ in range(3):
        session.step(sid)
    items = exercise.goal_items(session.load(sid))
    assert not any(i.ok for i in items) and items[0].seen == ["a-1"]
    session.predict(sid, 3, 1)
    session.step(sid)  # B.init_transactions fences A: ABORT marker, epoch 2
    assert [i.ok for i in exercise.goal_items(session.load(sid))] == [True, True]


def test_it_asks_before_the_step_and_reveals_after():
    sid = _exercise()
    for _ in range(3):
        session.step(sid)
    assert exercise.pending_question(session.load(sid)) == 3
    with pytest.raises(session.CommandError) as info:
        session.step(sid)
    assert info.value.status == 409
    with pytest.raises(session.CommandError):
        session.predict(sid, 3, 7)
    session.predict(sid, 3, 0)  # wrong, as people guess
    with pytest.raises(session.CommandError):
        session.predict(sid, 3, 1)  # answered already
    session.step(sid)
    live = session.load(sid)
    from playground.web import broadcast, panels

    ctx = panels.exercise(live, broadcast.view_of(live))
    (asked,) = ctx["asked"]
    assert asked["answer"] == 1 and asked["mine"] == 0 and asked["dist"]["counts"] == [1, 0, 0]
    assert ctx["question"] is None


def test_it_stops_a_run_at_a_question(settings):
    sid = _exercise()
    session.set_running(sid, True)
    while session.run_one(sid):
        pass
    live = session.load(sid)
    assert live.cursor == 3 and not live.running  # stopped before B.init_transactions: its question first


def test_it_reveals_hints_one_at_a_time_and_keeps_them_in_the_log():
    sid = _exercise()
    session.hint(sid)
    assert session.load(sid).hints_shown == 1
    session.hint(sid)
    with pytest.raises(session.CommandError):
        session.hint(sid)
    live = session.load(sid)
    assert list(live.commands) == [{"hint": 0, "outcome": "ok"}, {"hint": 1, "outcome": "ok"}]
    session.CACHE.clear()
    assert session.load(sid).hints_shown == 2  # replayed from the log


def test_it_checks_the_goal_on_the_fake_backends_observations(db):
    sid = _exercise("fake")
    for _ in range(3):
        session.step(sid)
    session.predict(sid, 3, -1)  # skipped
    session.step(sid)
    items = exercise.goal_items(session.load(sid))
    assert items[0].seen == ["a-1", "ABORT"] and items[0].ok
