"""What gives a question's answer away (playground/scenario/answers.py), read from the scenarios' own data: the right
choice, the Kafka names only it has (with the number it gives one), the kind of error only it names, and an error
its step expects that no earlier question's step expected."""

from __future__ import annotations

from playground.engine.spec import profile_from_key
from playground.scenario import answers, library


def _facts(scenario_id: str, profile: str, n: int, lang: str = "en") -> list[str]:
    steps = library.get(scenario_id).for_profile(profile_from_key(profile)).steps
    return [f.text for f in answers.facts(steps, answers.questions(steps)[n - 1].index, lang)]


def test_it_gives_a_name_the_number_the_right_choice_follows_it_with():
    assert _facts("ex-isolation-levels", "3.9-librdkafka", 1) == ["Nothing: every partition's LSO is still 0", "LSO 0"]
    assert _facts("ex-isolation-levels", "3.9-librdkafka", 1, "zh")[1] == "LSO 0"


def test_it_does_not_take_a_partition_s_number_for_the_name_s():
    assert _facts("ex-crash-timeout", "3.9-librdkafka", 1)[1:] == ["LSO"]


def test_it_names_the_error_its_bare_form_and_its_kind_in_each_client_s_profile():
    assert _facts("ex-who-is-fenced", "3.9-librdkafka", 3)[1:] == ["_FENCED", "FENCED", "fatal"]
    assert _facts("ex-who-is-fenced", "3.9-librdkafka", 3, "zh")[1:] == ["_FENCED", "FENCED", "致命"]
    # the Java client's commit rethrows what question 2 already told: only the kind of error is new
    assert _facts("ex-who-is-fenced", "3.9-java", 3)[1:] == ["abortable"]


def test_it_leaves_out_a_name_a_wrong_choice_also_has():
    # "PRODUCER_FENCED" is a wrong choice of question 2: only the right choice's INVALID_PRODUCER_EPOCH is a fact
    assert _facts("ex-who-is-fenced", "3.9-librdkafka", 2)[1:] == ["INVALID_PRODUCER_EPOCH"]
    assert _facts("ex-who-is-fenced", "3.9-java", 2)[1:] == ["INVALID_PRODUCER_EPOCH", "InvalidProducerEpochException"]


def test_it_finds_a_fact_as_whole_words_only():
    steps = library.get("ex-who-is-fenced").steps
    fenced = {f.text: f for f in answers.facts(steps, answers.questions(steps)[2].index, "en")}["FENCED"]
    assert fenced.found_in("A is FENCED") and not fenced.found_in("PRODUCER_FENCED (90)")
    assert not fenced.found_in("_FENCED")
    lso = {f.text: f for f in answers.facts(library.get("ex-isolation-levels").steps, 7, "en")}["LSO 0"]
    assert lso.found_in("held: behind LSO 0") and lso.found_in("the LSO is still 0")
    assert not lso.found_in("held: behind LSO 10") and not lso.found_in("LSO of events-0")
