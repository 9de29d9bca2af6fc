"""The header names what is connected (issue 31): each library and version the connections named, kafka-clients by
the name its users know, the kinds of client using each, a bounded number of them."""

from __future__ import annotations

from django.template.loader import render_to_string

from playground.web import panels


def _software(n: int) -> list[dict]:
    rows = [{"library": "apache-kafka-java", "version": "3.9.1", "kinds": {"producer": 2, "admin": 1}, "unclaimed": 0}]
    rows += [{"library": f"lib{i}", "version": "1.0", "kinds": {}, "unclaimed": 1} for i in range(n - 1)]
    return rows


def test_it_names_kafka_clients_as_its_users_know_it_with_the_kinds_using_it():
    rows = panels.connected_software({"external": {"software": _software(2)}})
    assert rows[0] == {"library": "kafka-clients", "version": "3.9.1", "kinds": [("admin", 1), ("producer", 2)]}
    assert rows[1] == {"library": "lib0", "version": "1.0", "kinds": []}


def test_it_lists_a_bounded_number_of_libraries_and_counts_the_rest():
    view = {"external": {"software": _software(panels.SOFTWARE_LISTED + 3)}}
    p = {
        "connected": panels.connected_software(view),
        "connected_more": 3,
        "own_actors": False,
        "profile": {"release": "3.9.1", "client": "librdkafka"},
        "title": {"en": "t"},
    }
    html = render_to_string("playground/panels/header.html", {"p": p, "u": {}, "lang": "en"})
    assert html.count('class="software"') == panels.SOFTWARE_LISTED and " +3</span>" in html
    assert 'kafka-clients 3.9.1</code> <small class="kinds">(admin client, producer ×2)</small>' in html
    assert 'Kafka 3.9.1 · <span class="connected-software"' in html  # no actor of its own: the profile's client unnamed
