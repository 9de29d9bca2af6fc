"""The inspector's settings, its allow-lists and how it shows keys and values.

Everything is read from Django settings with `getattr(settings, NAME, default)`; the cluster itself comes from the
same KAFKA_BOOTSTRAP_SERVERS / KAFKA_CLIENT_* settings as the real-cluster backend (playground/kafka/clusters.py,
`kafka_settings`). Nothing a user types becomes a network address: a form or a command line names topics and
transactional ids, and those are checked against INSPECTOR_TOPICS / INSPECTOR_TRANSACTIONAL_IDS (fnmatch patterns).

Defaults follow Kafka where Kafka has one: INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS is the broker's default
transaction.max.timeout.ms (15 min), which is also `kafka-transactions.sh find-hanging --max-transaction-timeout`'s
default (TransactionsCommand.java).
"""

from __future__ import annotations

import fnmatch
import hashlib
from dataclasses import dataclass, field, fields, replace
from typing import Any

from playground.kafka.clusters import kafka_settings


class InspectorError(Exception):
    """The cluster cannot be read (unreachable, unsupported security, no leader...): one sentence for the user."""


class RefusedError(InspectorError):
    """A topic or transactional id outside the allow-lists in settings, or anything the inspector never does."""


# setting name -> (field, default). The report lists them; `load_settings` reads them.
SETTINGS: dict[str, tuple[str, Any]] = {
    "INSPECTOR_TOPICS": ("topics", ()),
    "INSPECTOR_TRANSACTIONAL_IDS": ("transactional_ids", ()),
    "INSPECTOR_VALUE_MAX_CHARS": ("value_max_chars", 64),
    "INSPECTOR_HASH_VALUES": ("hash_values", False),
    "INSPECTOR_FETCH_MAX_BYTES": ("fetch_max_bytes", 256 * 1024),
    "INSPECTOR_WINDOW_RECORDS": ("window_records", 200),
    "INSPECTOR_WINDOW_BEFORE_LSO": ("window_before_lso", 20),
    "INSPECTOR_MAX_PARTITIONS": ("max_partitions", 64),
    "INSPECTOR_POLL_INTERVAL_S": ("poll_interval_s", 5.0),
    "INSPECTOR_TXN_LOG_LOOKBACK_S": ("txn_log_lookback_s", 3600.0),
    "INSPECTOR_TXN_LOG_MAX_RECORDS": ("txn_log_max_records", 20_000),
    "INSPECTOR_TXN_HISTORY_MAX": ("txn_history_max", 1000),
    "INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS": ("max_transaction_timeout_ms", 900_000),
    "INSPECTOR_REINIT_MAX_PER_HOUR": ("reinit_max_per_hour", 12),
    "INSPECTOR_LSO_STALL_MS": ("lso_stall_ms", None),
    "INSPECTOR_LIVE_GAP_S": ("live_gap_s", 5.0),
    "INSPECTOR_REQUEST_TIMEOUT_S": ("request_timeout_s", 5.0),
}


@dataclass(frozen=True)
class InspectorSettings:
    bootstrap: str = ""
    client: dict[str, Any] = field(default_factory=dict, compare=True, hash=False)
    topics: tuple[str, ...] = ()
    transactional_ids: tuple[str, ...] = ()
    value_max_chars: int = 64
    hash_values: bool = False
    fetch_max_bytes: int = 256 * 1024
    window_records: int = 200
    window_before_lso: int = 20
    max_partitions: int = 64
    poll_interval_s: float = 5.0
    txn_log_lookback_s: float = 3600.0
    txn_log_max_records: int = 20_000
    txn_history_max: int = 1000
    max_transaction_timeout_ms: int = 900_000
    reinit_max_per_hour: int = 12
    lso_stall_ms: int | None = None  # None: half of the open transaction's own transaction.timeout.ms
    live_gap_s: float | None = 5.0
    request_timeout_s: float = 5.0

    # ------------------------------------------------------------------------------------------ allow-lists

    def topic_allowed(self, topic: str) -> bool:
        # internal topics are never shown as such: __transaction_state is read only to build the timelines of
        # allowed ids, __consumer_offsets never
        if topic.startswith("__"):
            return False
        return any(fnmatch.fnmatchcase(topic, pat) for pat in self.topics)

    def transactional_id_allowed(self, txid: str) -> bool:
        return any(fnmatch.fnmatchcase(txid, pat) for pat in self.transactional_ids)

    def check_topic(self, topic: str) -> str:
        if not self.topic_allowed(topic):
            raise RefusedError(
                f"refusing topic {topic!r}: not in INSPECTOR_TOPICS {list(self.topics)} (server settings decide what "
                "may be inspected" + ("; internal topics never" if topic.startswith("__") else "") + ")"
            )
        return topic

    def check_transactional_id(self, txid: str) -> str:
        if not self.transactional_id_allowed(txid):
            raise RefusedError(
                f"refusing transactional id {txid!r}: not in INSPECTOR_TRANSACTIONAL_IDS {list(self.transactional_ids)}"
            )
        return txid

    # ------------------------------------------------------------------------------------------ values

    def render(self, data: bytes | None) -> str | None:
        """A key or value as shown: a hash when INSPECTOR_HASH_VALUES, else text (hex when not UTF-8) cut to
        INSPECTOR_VALUE_MAX_CHARS characters."""
        if data is None:
            return None
        if self.hash_values:
            return f"sha256:{hashlib.sha256(data).hexdigest()[:16]} ({len(data)} B)"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = "0x" + data.hex()
        limit = max(0, int(self.value_max_chars))
        if len(text) > limit:
            return text[:limit] + f"… ({len(data)} B)"
        return text


def check_security(bootstrap: str, client: dict[str, Any]) -> None:
    """The inspector reads with playground/kafka/wire.py only (so that it can see control batches and can be
    limited to read-only APIs); that client speaks PLAINTEXT and nothing else: no TLS, no SASL handshake."""
    protocol = str(client.get("security.protocol", "plaintext")).strip().lower()
    schemes = {s.split("://", 1)[0].upper() for s in bootstrap.split(",") if "://" in s}
    if protocol != "plaintext" or (schemes - {"PLAINTEXT"}):
        raise InspectorError(
            f"the inspector cannot read this cluster: KAFKA_CLIENT_CONFIG asks for security.protocol="
            f"{client.get('security.protocol', next(iter(schemes - {'PLAINTEXT'}), '?'))}, but its read-only protocol "
            "client (playground/kafka/wire.py) speaks PLAINTEXT only (no TLS, no SASL). Point it at a PLAINTEXT "
            "listener, or extend wire.py with SSL/SASL first."
        )


def load_settings(**overrides: Any) -> InspectorSettings:
    """Settings from Django (getattr(settings, NAME, default)); `overrides` by field name, for code (the CLI's
    --since, tests) that narrows them. Never filled from user input."""
    try:
        from django.conf import settings as dj

        configured = dj.configured
    except Exception:
        dj, configured = None, False
    values: dict[str, Any] = {}
    for name, (attr, default) in SETTINGS.items():
        values[attr] = getattr(dj, name, default) if configured else default
    for attr in ("topics", "transactional_ids"):
        v = values[attr]
        values[attr] = (v,) if isinstance(v, str) else tuple(v or ())
    ks = kafka_settings()
    values["bootstrap"] = ks["bootstrap"]
    values["client"] = dict(ks["client"])
    s = InspectorSettings(**values)
    if overrides:
        known = {f.name for f in fields(InspectorSettings)}
        unknown = set(overrides) - known
        if unknown:
            raise ValueError(f"unknown inspector settings: {sorted(unknown)}")
        s = replace(s, **overrides)
    return s
