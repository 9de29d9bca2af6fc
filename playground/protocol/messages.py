"""Requests and responses: headers (RequestHeader v1, v2 with tagged fields for flexible versions; ResponseHeader v0,
v1), bodies as kio's dataclasses, looked up by api key and version (kio.index; for the versions kio lacks, classes
built the same way from Kafka's own definitions, kafkajson.py), read and written by kio.serial.

`build(cls, data)` makes a response of any version from one plain description: the fields the version has are taken
from `data` (nested entities from dicts and lists), the others are left out, and what `data` does not give gets the
schema's default (or the type's zero). So a handler describes its answer once and every version of it is right.

Kafka's rules kept here (RequestContext.parseRequest, KafkaApis.handleApiVersionsRequest, ApiVersionsRequest
.getErrorResponse): a request of an API or version the broker does not serve cannot be parsed, and the broker closes
the connection; except ApiVersions, which is answered at v0 with UNSUPPORTED_VERSION and the ApiVersions range it
serves, so that the client can retry at a version both know. ApiVersions responses always carry ResponseHeader v0.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import types
import typing
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16

from playground.protocol import kafkajson
from playground.protocol.errors import error_code
from playground.protocol.schemas import ApiVersionsRequestV5, DescribeTransactionsResponseV0

API_VERSIONS_KEY = 18
_PREFIX = struct.Struct(">hhi")
_CORRELATION = struct.Struct(">i")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


class RequestError(ValueError):
    """A request a broker cannot read: it closes the connection. `correlation_id` when the header got that far."""

    def __init__(self, message: str, correlation_id: int | None = None) -> None:
        super().__init__(message)
        self.correlation_id = correlation_id


class UnsupportedVersion(RequestError):
    def __init__(self, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(f"api key {api_key} version {api_version} is not served", correlation_id)
        self.api_key = api_key
        self.api_version = api_version


@dataclass(frozen=True, slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any  # the kio request dataclass of (api_key, api_version)
    size: int = 0  # the frame's bytes (RequestChannel.Request.sizeInBytes: what a produce quota counts)

    @property
    def name(self) -> str:
        return api_name(self.api_key)


# ------------------------------------------------------------------------------------- schemas kio lacks


_EXTRA_REQUESTS: dict[tuple[int, int], Any] = {(18, 5): ApiVersionsRequestV5}
_EXTRA_RESPONSES: dict[tuple[int, int], Any] = {(65, 0): DescribeTransactionsResponseV0}
# Same body as the version before.
_SAME_RESPONSES: dict[tuple[int, int], tuple[int, int]] = {(18, 5): (18, 4)}


@functools.cache
def request_class(api_key: int, api_version: int) -> Any:
    extra = _EXTRA_REQUESTS.get((api_key, api_version))
    if extra is not None:
        return extra
    try:
        return load_request_schema(api_key, api_version)
    except Exception:
        return kafkajson.message_class(api_key, api_version, "request")


@functools.cache
def response_class(api_key: int, api_version: int) -> Any:
    extra = _EXTRA_RESPONSES.get((api_key, api_version))
    if extra is not None:
        return extra
    key = _SAME_RESPONSES.get((api_key, api_version), (api_key, api_version))
    try:
        return load_response_schema(*key)
    except Exception:
        return kafkajson.message_class(*key, "response")


@functools.cache
def api_name(api_key: int) -> str:
    from kio.schema.index import api_key_map

    name = api_key_map.get(api_key)
    if name is None:
        return f"Api{api_key}"
    return "".join(part.capitalize() for part in name.split("_"))


@functools.cache
def readable_versions(api_key: int) -> tuple[int, int] | None:
    """The versions of an API this module reads and writes (kio's schemas, the extras above and the classes built
    from Kafka's own definitions, kafkajson.py), from kio's index: a version's modules are imported when a request of
    it first comes (importing them all costs a second). None when it reads none; the versions between the lowest and
    the highest are all read."""
    from kio.schema.index import EntityType, api_key_map, schema_name_map

    name = api_key_map.get(api_key)
    entities = schema_name_map.get(name, {}) if name is not None else {}
    versions = {v for v, kinds in entities.items() if EntityType.request in kinds and EntityType.response in kinds}
    versions |= {v for (key, v) in _EXTRA_REQUESTS if key == api_key}
    versions |= kafkajson.versions(api_key)
    if not versions:
        return None
    lo, hi = min(versions), max(versions)
    assert versions == set(range(lo, hi + 1)), f"api key {api_key}: versions {sorted(versions)} leave a gap"
    return lo, hi


# ------------------------------------------------------------------------------------------- requests


def peek(frame: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame, or RequestError."""
    if len(frame) < _PREFIX.size:
        raise RequestError(f"a request of {len(frame)} bytes has no header")
    return _PREFIX.unpack_from(frame)


def decode_request(frame: bytes, served: Mapping[int, tuple[int, int]]) -> Request:
    """Read one request frame (without its size prefix). `served`: api key -> (min, max) versions accepted."""
    api_key, api_version, correlation_id = peek(frame)
    versions = served.get(api_key)
    cls = request_class(api_key, api_version)
    if versions is None or not versions[0] <= api_version <= versions[1] or cls is None:
        raise UnsupportedVersion(api_key, api_version, correlation_id)
    try:
        header, size = entity_reader(cls.__header_schema__)(frame, 0)
        body: Any = entity_reader(cls)(frame, size)[0]
    except Exception as e:  # kio's DecodeError family, and whatever a malformed value makes a reader raise
        raise RequestError(f"{api_name(api_key)} v{api_version}: {type(e).__name__}: {e}", correlation_id) from None
    return Request(api_key, api_version, correlation_id, getattr(header, "client_id", None), body, len(frame))


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: Any) -> bytes:
    """A request frame's payload (for clients and tests)."""
    cls = request_class(api_key, api_version)
    if cls is None:
        raise ValueError(f"no schema for api key {api_key} v{api_version}")
    header_cls = cls.__header_schema__
    header = header_cls(
        request_api_key=i16(api_key),
        request_api_version=i16(api_version),
        correlation_id=correlation_id,
        client_id=client_id,
    )
    buf = io.BytesIO()
    entity_writer(header_cls)(buf, header)
    entity_writer(cls)(buf, body)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------- responses


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """A response frame's payload: header (v0 for ApiVersions and non-flexible versions, v1 otherwise) and body."""
    cls: Any = type(body)
    flexible_header = cls.__flexible__ and api_key != API_VERSIONS_KEY
    buf = io.BytesIO()
    buf.write(_CORRELATION.pack(correlation_id))
    if flexible_header:
        buf.write(b"\x00")  # no tagged fields
    _writer(cls)(buf, body)
    return buf.getvalue()


@functools.cache
def _writer(cls: Any) -> Any:
    return entity_writer(cls)


def decode_response(api_key: int, api_version: int, payload: bytes) -> tuple[int, Any]:
    """(correlation id, body) of a response frame's payload (for clients and tests)."""
    cls = response_class(api_key, api_version)
    if cls is None:
        raise ValueError(f"no schema for api key {api_key} v{api_version}")
    (correlation_id,) = _CORRELATION.unpack_from(payload)
    pos = 4
    if cls.__flexible__ and api_key != API_VERSIONS_KEY:
        pos += 1  # an empty tagged-field section (the only kind a broker writes)
    body: Any = entity_reader(cls)(payload, pos)[0]
    return correlation_id, body


def api_versions_error(correlation_id: int, api_versions_range: tuple[int, int]) -> bytes:
    """ApiVersionsRequest.getErrorResponse(UNSUPPORTED_VERSION), written as v0."""
    cls = response_class(API_VERSIONS_KEY, 0)
    assert cls is not None
    body = build(
        cls,
        {
            "error_code": "UNSUPPORTED_VERSION",
            "api_keys": [
                {
                    "api_key": API_VERSIONS_KEY,
                    "min_version": api_versions_range[0],
                    "max_version": api_versions_range[1],
                }
            ],
        },
    )
    return encode_response(API_VERSIONS_KEY, 0, correlation_id, body)


# ------------------------------------------------------------------------------------------- building


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    kind: str  # entity, entities, error, timedelta, datetime, uuid, values, plain
    sub: Any  # the nested dataclass for entity/entities
    default: Any  # dataclasses.MISSING when required


@functools.cache
def _plan(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        kafka_type = f.metadata.get("kafka_type")
        origin = typing.get_origin(hint)
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        sub = None
        if origin is tuple and args and dataclasses.is_dataclass(args[0]):
            kind, sub = "entities", args[0]
        elif origin in (typing.Union, types.UnionType) and args:
            inner = args[0]
            if typing.get_origin(inner) is tuple and dataclasses.is_dataclass(typing.get_args(inner)[0]):
                kind, sub = "entities", typing.get_args(inner)[0]
            elif dataclasses.is_dataclass(inner):
                kind, sub = "entity", inner
            else:
                kind = _kind_of(kafka_type)
        elif dataclasses.is_dataclass(hint):
            kind, sub = "entity", hint
        elif origin is tuple:
            kind = "values"
        else:
            kind = _kind_of(kafka_type)
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        plan.append(_Field(f.name, kind, sub, default))
    return tuple(plan)


def _kind_of(kafka_type: str | None) -> str:
    return {
        "error_code": "error",
        "timedelta_i32": "timedelta",
        "timedelta_i64": "timedelta",
        "datetime_i64": "datetime",
        "uuid": "uuid",
    }.get(kafka_type or "", "plain")


@functools.cache
def _zero(cls: type, name: str) -> Any:
    """What a required field without a value gets: the zero of its Kafka type (null where the type is nullable)."""
    f = next(f for f in dataclasses.fields(cls) if f.name == name)
    hint = typing.get_type_hints(cls)[name]
    if type(None) in typing.get_args(hint):
        return None
    kafka_type = f.metadata.get("kafka_type", "")
    if kafka_type in ("string",):
        return ""
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "float64":
        return 0.0
    return 0


def build(cls: type, data: Mapping[str, Any]) -> Any:
    """An instance of the kio dataclass `cls` from plain data (see the module's docstring). Errors may be given by
    name or code, durations and times in milliseconds, UUIDs as uuid.UUID or int."""
    values: dict[str, Any] = {}
    for f in _plan(cls):
        if f.name in data:
            v = data[f.name]
        elif f.default is not dataclasses.MISSING:
            continue
        elif f.kind == "entities":
            v = ()
        elif f.kind == "entity":
            v = {}
        elif f.kind == "error":
            v = None
        elif f.kind in ("timedelta", "datetime"):
            v = 0
        elif f.kind == "uuid":
            v = None
        else:
            v = _zero(cls, f.name)
        kind = f.kind
        if kind == "plain":
            values[f.name] = v
        elif kind == "entities":
            values[f.name] = None if v is None else tuple(build(f.sub, x) if isinstance(x, Mapping) else x for x in v)
        elif kind == "entity":
            values[f.name] = build(f.sub, v) if isinstance(v, Mapping) else v
        elif kind == "error":
            values[f.name] = v if isinstance(v, ErrorCode) else (ErrorCode(v) if isinstance(v, int) else error_code(v))
        elif kind == "timedelta":
            values[f.name] = v if isinstance(v, datetime.timedelta) else datetime.timedelta(milliseconds=v)
        elif kind == "datetime":
            values[f.name] = to_datetime(v)
        elif kind == "uuid":
            values[f.name] = v if v is None or isinstance(v, uuid.UUID) else uuid.UUID(int=v)
        else:  # values: a tuple of primitives
            values[f.name] = None if v is None else tuple(v)
    return cls(**values)


def to_datetime(value: Any) -> Any:
    if value is None or isinstance(value, datetime.datetime):
        return value
    return _EPOCH + datetime.timedelta(milliseconds=int(value))


def ms(value: Any) -> int:
    """Milliseconds of a duration or time as kio reads it (timedelta, datetime) or of a plain number."""
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    return int(value)


def field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in _plan(cls))
