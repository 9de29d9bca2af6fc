"""Message versions Kafka 4.4 serves that kio 0.6.5 has no schema for, written as kio writes its generated ones (from
Kafka's JSON schemas; the fields as kafka-clients 4.4.0's generated *Data classes declare them, SCHEMAS[version]).

No `from __future__ import annotations` here: kio's serializers read the field types at run time.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiVersionsRequestV5:
    """ApiVersionsRequest v5 (Kafka 4.x): adds the sender's cluster id and node id; the response is v4's."""

    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(5)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(18)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    client_software_name: str = field(metadata={"kafka_type": "string"})
    client_software_version: str = field(metadata={"kafka_type": "string"})
    cluster_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    node_id: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTopic:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTransaction:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    transactional_id: str = field(metadata={"kafka_type": "string"})
    transaction_state: str = field(metadata={"kafka_type": "string"})
    transaction_timeout_ms: i32 = field(metadata={"kafka_type": "int32"})
    transaction_start_time_ms: i64 = field(metadata={"kafka_type": "int64"})
    producer_id: i64 = field(metadata={"kafka_type": "int64"})
    producer_epoch: i16 = field(metadata={"kafka_type": "int16"})
    topics: tuple[DescribedTopic, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribeTransactionsResponseV0:
    """DescribeTransactionsResponse v0 (KIP-664) with TransactionStartTimeMs as the int64 the schema says: kio types it
    as a timestamp and cannot read the -1 a coordinator sends for an id with no transaction open. The same
    declaration reads it from real brokers (playground/kafka/wire.py)."""

    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(65)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    transaction_states: tuple[DescribedTransaction, ...]
