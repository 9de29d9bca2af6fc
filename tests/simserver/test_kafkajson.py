"""The message classes built from Kafka's own definitions (playground/protocol/kafkajson.py) are kio's: for every
version that a kept definition and kio both have, the class built is the one kio declares, field for field (names,
types, metadata, defaults, nested classes, class variables). So the versions only the definitions have (Produce v0-2,
Fetch v0-3, ..., TxnOffsetCommit v6) are read and written as kio would have written them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from kio.index import load_request_schema, load_response_schema

from playground.protocol import kafkajson, messages

# Fields Kafka renamed after 4.0 (the definitions kio is generated from): (message, kio's name) -> the new name
RENAMED = {("TxnOffsetCommitRequest", "generation_id"): "generation_id_or_member_epoch"}


def _shape(hint: Any) -> Any:
    if dataclasses.is_dataclass(hint):
        return ("class", hint.__name__)
    args = getattr(hint, "__args__", None)
    if args:
        return (getattr(hint, "__origin__", "union"), tuple(_shape(a) for a in args))
    return hint


def _default(value: Any) -> Any:
    if value is dataclasses.MISSING:
        return "required"
    if dataclasses.is_dataclass(value):
        return (
            type(value).__name__,
            tuple((f.name, _default(getattr(value, f.name))) for f in dataclasses.fields(value)),
        )
    return (type(value), value)


def _describe(cls: Any, renamed: dict[str, str]) -> list[Any]:
    out = []
    for c in kafkajson.walk(cls):
        fields = [
            (renamed.get(f.name, f.name), _shape(f.type), dict(f.metadata), _default(f.default))
            for f in dataclasses.fields(c)
        ]
        class_vars = (c.__type__, c.__version__, c.__flexible__, c.__api_key__, c.__header_schema__)
        out.append((c.__name__, class_vars, fields))
    return sorted(out, key=lambda item: item[0])


def _shared_versions() -> list[tuple[int, int, str]]:
    out = []
    for (api_key, kind), schemas in sorted(kafkajson.definitions().items()):
        load = load_request_schema if kind == "request" else load_response_schema
        for schema in schemas:
            valid = kafkajson.Versions(schema["validVersions"])
            for version in range(valid.lo, valid.hi + 1):
                try:
                    load(api_key, version)
                except Exception:
                    continue
                out.append((api_key, version, kind))
    return out


@pytest.mark.parametrize(("api_key", "version", "kind"), _shared_versions())
def test_it_builds_every_version_kio_has_as_kio_declares_it(api_key, version, kind):
    kio_cls = (load_request_schema if kind == "request" else load_response_schema)(api_key, version)
    schema = next(
        s for s in kafkajson.definitions()[(api_key, kind)] if version in kafkajson.Versions(s["validVersions"])
    )
    built = kafkajson.build(schema, version)
    renamed = {old: new for (message, old), new in RENAMED.items() if message == schema["name"]}
    assert _describe(built, {}) == _describe(kio_cls, renamed)


def test_it_checks_a_hundred_versions_or_more_against_kio():
    assert len(_shared_versions()) >= 100


@pytest.mark.parametrize(
    ("api_key", "versions"),
    [(0, range(3)), (1, range(4)), (2, [0]), (8, [0, 1]), (9, [0]), (19, [0, 1]), (20, [0]), (23, [0, 1])],
)
def test_it_reads_the_versions_kafka_4_removed_from_kafka_3_9_1s_definitions(api_key, versions):
    for version in versions:
        assert messages.request_class(api_key, version).__module__ == kafkajson.__name__
        assert messages.response_class(api_key, version).__module__ == kafkajson.__name__


def test_it_reads_the_versions_kafka_4_4_added_after_kio():
    assert messages.readable_versions(28) == (0, 6)
    assert messages.readable_versions(42) == (0, 3)
    cls = messages.request_class(28, 6)
    topic = {f.name for f in dataclasses.fields(cls.__dataclass_fields__["topics"].type.__args__[0])}
    assert topic == {"topic_id", "partitions"}  # KIP-1319: by id, no name


def test_it_names_fields_as_kio_does():
    assert kafkajson.to_snake_case("ISRReplicas") == "isr_replicas"
    assert kafkajson.to_snake_case("V3AndBelow") == "v3_and_below"
    assert kafkajson.to_snake_case("Type") == "type_"
    produce = messages.request_class(0, 0)
    assert [f.name for f in dataclasses.fields(produce)] == ["acks", "timeout", "topic_data"]
