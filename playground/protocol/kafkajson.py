"""Message classes for the versions kio 0.6.5 has no schema for, built from Kafka's own message definitions
(clients/src/main/resources/common/message/*.json, kept in protocol/kafka_messages/<release>/ as the release's
kafka-clients jar has them; tools/kafka/messages.py copies them) by the rules kio's code generator follows
(kio's codegen/parser.py and generate_schema.py), so that a handler reads an old version's fields by the same names and
types as a newer one's.

kio generates its schemas from Kafka 4.0's definitions, which dropped what KIP-896 removed (Produce v0-2, Fetch v0-3,
ListOffsets v0, OffsetCommit v0-1, ...); the brokers of 3.5 and 3.9 still serve those versions. Kafka 4.4 added versions
after kio (TxnOffsetCommit v6, DeleteGroups v3). tests/simserver/test_kafkajson.py checks that every class built here
for a version kio has is the class kio declares, field for field.

The classes are made with dataclasses.make_dataclass and carry real types (not strings), which kio's readers inspect.
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime
import functools
import json
import re
import uuid
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

import kio.schema.types as kio_types
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.static.constants import EntityType
from kio.static.primitive import (
    Records,
    TZAware,
    f64,
    i8,
    i16,
    i32,
    i32Timedelta,
    i64,
    i64Timedelta,
    u16,
    u32,
    u64,
)

_PACKAGE = "playground.protocol"
_FOLDER = "kafka_messages"
_COMMENT = re.compile(r"^\s*//")
_BUILTINS = frozenset(dir(builtins))

# kio's codegen/parser.py: the fields it reads as durations and times (their names lose "Ms"), and as error codes
TIMEDELTA_NAMES = frozenset(
    {
        "timeoutMs",
        "TimeoutMs",
        "ThrottleTimeMs",
        "MaxWaitMs",
        "SessionLifetimeMs",
        "TransactionTimeoutMs",
        "MaxLifetimeMs",
        "SessionTimeoutMs",
        "RebalanceTimeoutMs",
        "ExpiryTimePeriodMs",
        "RenewPeriodMs",
        "RetentionTimeMs",
        "HeartbeatIntervalMs",
        "PushIntervalMs",
        "AcquisitionLockTimeoutMs",
    }
)
DATETIME_NAMES = frozenset(
    {"IssueTimestampMs", "ExpiryTimestampMs", "MaxTimestampMs", "TransactionStartTimeMs", "LogAppendTimeMs"}
)
ERROR_CODE_NAMES = frozenset({"ErrorCode", "PartitionErrorCode"})

_HINTS: Mapping[str, Any] = {
    "int8": i8,
    "int16": i16,
    "int32": i32,
    "int64": i64,
    "uint16": u16,
    "uint32": u32,
    "uint64": u64,
    "float64": f64,
    "string": str,
    "bytes": bytes,
    "records": Records,
    "bool": bool,
    "uuid": uuid.UUID,
    "error_code": ErrorCode,
    "timedelta_i32": i32Timedelta,
    "timedelta_i64": i64Timedelta,
    "datetime_i64": TZAware,
}
_NUMBERS = frozenset({"int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float64"})
_TAGGED_DEFAULTS: Mapping[str, Any] = {
    "int8": i8(0),
    "int16": i16(0),
    "int32": i32(0),
    "int64": i64(0),
    "uint16": u16(0),
    "uint32": u32(0),
    "uint64": u64(0),
    "float64": f64(0.0),
    "bool": False,
    "error_code": ErrorCode.none,
}


class Versions:
    """A version range as Kafka's message definitions write it: "3+", "0-2", "5", "none"."""

    __slots__ = ("hi", "lo")

    def __init__(self, text: str) -> None:
        if text == "none":
            self.lo, self.hi = 1, 0
        elif text.endswith("+"):
            self.lo, self.hi = int(text[:-1]), 1 << 15
        elif "-" in text:
            lo, hi = text.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(text)

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi


def to_snake_case(value: str) -> str:
    """kio's codegen/case.py: "ISRReplicas" -> "isr_replicas", "Type" -> "type_" (a builtin's name)."""
    groups: list[str] = []
    current = ""
    for i, char in enumerate(value):
        if not current:
            current = char
            continue
        previous = current[-1]
        following = value[i + 1] if i + 1 < len(value) else None
        if following is None:
            if previous.islower() and char.isupper():
                groups.append(current)
                current = char
            else:
                current += char
            break
        if (
            (previous.isupper() and char.isupper() and following.islower())
            or (previous.islower() and char.isupper())
            or (previous.isdigit() and char.isupper() and following.islower())
        ):
            groups.append(current)
            current = char
        else:
            current += char
    groups.append(current)
    formatted = "_".join(groups).lower()
    return formatted + "_" if formatted in _BUILTINS else formatted


# ------------------------------------------------------------------------------------------------ the definitions


@functools.cache
def definitions() -> dict[tuple[int, str], list[dict[str, Any]]]:
    """(api key, "request" | "response") -> the definitions kept, newest release first."""
    found: dict[tuple[int, str], list[tuple[tuple[int, ...], dict[str, Any]]]] = {}
    for release_dir in resources.files(_PACKAGE).joinpath(_FOLDER).iterdir():
        if not release_dir.is_dir():
            continue
        release = tuple(int(p) for p in release_dir.name.split("."))
        for item in release_dir.iterdir():
            if not item.name.endswith(".json"):
                continue
            text = "".join(line for line in item.read_text().splitlines(True) if not _COMMENT.match(line))
            schema = json.loads(text)
            found.setdefault((schema["apiKey"], schema["type"]), []).append((release, schema))
    return {key: [s for _r, s in sorted(items, key=lambda x: x[0], reverse=True)] for key, items in found.items()}


def versions(api_key: int) -> set[int]:
    """The versions of an API whose request and response are both defined here."""
    out: set[int] | None = None
    for kind in ("request", "response"):
        found = set()
        for schema in definitions().get((api_key, kind), ()):
            valid = Versions(schema["validVersions"])
            found |= set(range(valid.lo, valid.hi + 1))
        out = found if out is None else out & found
    return out or set()


@functools.cache
def message_class(api_key: int, version: int, kind: str) -> Any:
    """The class of `kind` ("request" or "response") of an API at a version, or None when no definition kept here
    has it (the newest release's definition that has the version)."""
    for schema in definitions().get((api_key, kind), ()):
        if version in Versions(schema["validVersions"]):
            return build(schema, version)
    return None


# ------------------------------------------------------------------------------------------------ building


def build(schema: Mapping[str, Any], version: int) -> Any:
    """The top-level class of a message definition at `version`, its nested classes built with it."""
    structs = {s["name"]: s for s in schema.get("commonStructs", ())}
    flexible = version in Versions(schema["flexibleVersions"])
    kind = schema["type"]
    if kind == "request":
        header: Any = RequestHeaderV2 if flexible else RequestHeaderV1
    else:
        header = ResponseHeaderV0 if schema["apiKey"] == 18 or not flexible else ResponseHeaderV1
    class_vars = {
        "__version__": i16(version),
        "__flexible__": flexible,
        "__api_key__": i16(schema["apiKey"]),
        "__header_schema__": header,
    }
    built: dict[str, Any] = {}
    return _dataclass(schema["name"], schema["fields"], version, structs, class_vars, built, EntityType[kind])


def _dataclass(
    name: str,
    fields: list[dict[str, Any]],
    version: int,
    structs: Mapping[str, Any],
    class_vars: Mapping[str, Any],
    built: dict[str, Any],
    entity_type: EntityType,
) -> Any:
    if name in built:
        return built[name]
    spec = [_field(f, version, structs, class_vars, built) for f in fields if version in _field_versions(f)]
    namespace = {"__type__": entity_type, **class_vars}  # class attributes, as kio's ClassVars are
    cls = dataclasses.make_dataclass(name, spec, namespace=namespace, frozen=True, slots=True, kw_only=True)
    cls.__module__ = __name__
    built[name] = cls
    return cls


def _field_versions(f: Mapping[str, Any]) -> Versions:
    return Versions(f.get("versions") or f["taggedVersions"])  # kio: taggedVersions stands in for a missing versions


def _tag(f: Mapping[str, Any], version: int) -> int | None:
    tagged = f.get("taggedVersions")
    return f["tag"] if tagged is not None and version in Versions(tagged) else None


def _nullable(f: Mapping[str, Any], version: int) -> bool:
    return "nullableVersions" in f and version in Versions(f["nullableVersions"])


def _field(
    f: Mapping[str, Any],
    version: int,
    structs: Mapping[str, Any],
    class_vars: Mapping[str, Any],
    built: dict[str, Any],
) -> tuple[str, Any, Any]:
    raw_type: str = f["type"]
    is_array = raw_type.startswith("[]")
    inner = raw_type.removeprefix("[]")
    tag = _tag(f, version)
    nullable = _nullable(f, version)

    if "fields" in f or inner in structs:  # an entity or an array of them
        sub_fields = f["fields"] if "fields" in f else structs[inner]["fields"]
        cls = _dataclass(inner, sub_fields, version, structs, class_vars, built, EntityType.nested)
        name = to_snake_case(f["name"])
        if is_array:
            hint: Any = tuple[cls, ...]  # type: ignore[valid-type]
            hint = hint | None if nullable else hint
            if tag is None:
                return name, hint, dataclasses.field()
            return name, hint, dataclasses.field(metadata={"tag": tag}, default=())
        hint = cls | None if nullable else cls
        tagged = {"tag": tag} if tag is not None else {}
        if f.get("default") is not None:
            return name, hint, dataclasses.field(metadata=tagged, default=None)
        if tag is not None and "fields" in f and _only_defaults(f["fields"]):
            return name, hint, dataclasses.field(metadata=tagged, default=cls())
        if tag is not None and f.get("ignorable", False):
            return name, hint, dataclasses.field(metadata=tagged, default=None)
        return name, hint, dataclasses.field(metadata=tagged) if tagged else dataclasses.field()

    kafka_type, name = _primitive(f["name"], inner)
    custom = getattr(kio_types, _capitalize(f["entityType"]), None) if f.get("entityType") else None
    base = custom or _HINTS[kafka_type]
    metadata: dict[str, Any] = {"kafka_type": kafka_type}
    if tag is not None:
        metadata["tag"] = tag
    default = f.get("default")
    if is_array:
        item = base | None if kafka_type == "uuid" else base
        hint = tuple[item, ...]  # type: ignore[valid-type]
        hint = hint | None if nullable else hint
        return name, hint, dataclasses.field(metadata=metadata, default=None if default == "null" else ())
    optional = kafka_type not in _NUMBERS and (
        (tag is not None and f.get("ignorable", False) and default is None)
        or nullable
        or (kafka_type == "datetime_i64" and default == "-1")
    )
    hint = base | None if optional or kafka_type == "uuid" else base
    if default is not None:
        return name, hint, dataclasses.field(metadata=metadata, default=_default(kafka_type, default, custom))
    if tag is not None and f.get("ignorable", False):
        return name, hint, dataclasses.field(metadata=metadata, default=_TAGGED_DEFAULTS.get(kafka_type))
    return name, hint, dataclasses.field(metadata=metadata)


def _primitive(json_name: str, json_type: str) -> tuple[str, str]:
    """(kio's kafka_type, kio's field name) of a primitive field."""
    if json_name in ERROR_CODE_NAMES:
        return "error_code", to_snake_case(json_name)
    if json_name in TIMEDELTA_NAMES:
        kind = {"int32": "timedelta_i32", "int64": "timedelta_i64"}[json_type]
        return kind, to_snake_case(json_name.removesuffix("Ms"))
    if json_name in DATETIME_NAMES:
        return "datetime_i64", to_snake_case(json_name.removesuffix("Ms"))
    return json_type, to_snake_case(json_name)


def _only_defaults(fields: list[dict[str, Any]]) -> bool:
    """kio: a tagged entity whose fields all have defaults defaults to an instance of itself (Fetch's ReplicaState)."""
    return all(not f["type"].startswith("[]") and f.get("default") is not None for f in fields)


def _capitalize(value: str) -> str:
    return value[0].upper() + value[1:]


def _default(kafka_type: str, default: Any, custom: Any) -> Any:
    """kio's format_default: a definition's default as the field's value."""
    if default == "null":
        return None
    wrap = custom or (lambda v: v)
    if kafka_type == "string":
        return wrap(default)
    if kafka_type in _NUMBERS - {"float64"}:
        value = int(default, 0) if isinstance(default, str) else int(default)
        return custom(value) if custom else _HINTS[kafka_type](value)
    if kafka_type == "bool":
        return wrap(str(default).lower() == "true")
    if kafka_type == "float64":
        return wrap(float(default))
    if kafka_type == "error_code":
        return ErrorCode(int(default))
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return _HINTS[kafka_type].parse(datetime.timedelta(milliseconds=int(default)))
    if kafka_type == "datetime_i64" and str(default) == "-1":
        return None
    raise ValueError(f"no default of type {kafka_type}: {default!r}")


def walk(cls: Any) -> Iterator[Any]:
    """A message class and every class nested in it, each once."""
    seen: set[int] = set()
    stack = [cls]
    while stack:
        c = stack.pop()
        if id(c) in seen:
            continue
        seen.add(id(c))
        yield c
        for f in dataclasses.fields(c):
            stack.extend(t for t in _dataclasses_in(f.type))


def _dataclasses_in(hint: Any) -> Iterator[Any]:
    if dataclasses.is_dataclass(hint):
        yield hint
    for arg in getattr(hint, "__args__", ()):
        if arg is not Ellipsis:
            yield from _dataclasses_in(arg)
