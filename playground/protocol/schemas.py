"""Message versions Kafka 4.4 serves that kio 0.6.5 has no schema for, written as kio writes its generated ones (from
Kafka's JSON schemas; the fields as kafka-clients 4.4.0's generated *Data classes declare them, SCHEMAS[version]).

No `from __future__ import annotations` here: kio's serializers read the field types at run time.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32


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
