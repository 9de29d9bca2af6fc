"""What the inspector's findings say, sentence by sentence: each finding carries its sentences as [id, {values}] (a
value may itself be [id, {values}], a part said the same way), so that the command line says them in English (`say`)
and the web page in its reader's language (playground/web/inspectpage.py: the same ids through the catalogue, whose
msgids are these texts with %(name)s for {name}). Pure: no Django."""

from __future__ import annotations

import re
from typing import Any

SENTENCES = {
    # hanging.py: why find-hanging calls an open transaction hanging, or still tracked
    "no_txid": "no transactional id has this producer id (ListTransactions)",
    "txid_unknown": "the coordinator does not know the transactional id (DescribeTransactions)",
    "not_listed": "the coordinator's transaction for this id ({state}, producer id {pid}, epoch {epoch}) does not list {tp}",
    "still_listed": "the coordinator still lists {tp} in its {state} transaction: it will abort it when the "
    "transaction's timeout runs out",
    # hanging_transaction, long_open_transaction
    "hanging": "{tp}: hanging transaction of producer id {pid} epoch {epoch} from offset {offset}, last write {ago} "
    "ago; {reason}",
    "long_open": "{tp}: transaction open past the maximum timeout of producer id {pid} epoch {epoch} from offset "
    "{offset}, last write {ago} ago; {reason}",
    "hanging_why": "DescribeProducers shows its last write {ago} ago, past the maximum transaction timeout, and {reason}",
    # shared_transactional_id, and why an InitProducerId is a second instance or a restart (classify_inits)
    "shared": "{txid}: epoch {old} of producer id {pid} was fenced by an InitProducerId (new epoch {new}) {gap} after "
    "its last activity, {what}: another live instance uses the same transactional.id",
    "fenced_open": "aborted its open transaction on {partitions} (ABORT at epoch {epoch})",
    "between": "between two transactions",
    "late_writes": "epoch {old} still wrote after epoch {new} started (records created after the InitProducerId at "
    "{where}): a stopped instance cannot write",
    "alternating": "this InitProducerId aborted an open transaction whose instance was active {gap} before, and so "
    "did the one before it: instances alternating, each fencing the other mid-transaction",
    "live_fence": "this InitProducerId aborted an open transaction whose instance was active {gap} before "
    "({setting}): a second instance fencing a live one, or one that crashed mid-transaction and restarted within "
    "that time",
    "live_fence_next": "this InitProducerId aborted an open transaction whose instance was active {gap} before "
    "({setting}), and so did the next one: instances alternating",
    "no_gap_setting": "no INSPECTOR_LIVE_GAP_S",
    "restart_idle": "its InitProducerId aborted a transaction idle for {gap}: an instance that died "
    "mid-transaction, restarted",
    "restart": "the previous transaction had completed ({outcome}) before this InitProducerId: a restart",
    # frequent_reinit
    "frequent": "{txid}: {n} InitProducerId within an hour (more than INSPECTOR_REINIT_MAX_PER_HOUR={max}): instances "
    "fencing each other, or a crash loop",
    "frequent_why": "__transaction_state holds {n} InitProducerId records of this id between {span} of each other "
    "({restarts} of them after the previous transaction had completed: restarts)",
    # interleaved_plain_records
    "interleaved": "{tp}: {n} non-transactional record(s) at offset(s) {offsets} inside the transaction of producer "
    "id {pid} epoch {epochs} (offsets {first}..{end}, {outcome}): {effect}",
    "committed": "committed",
    "aborted": "aborted",
    "still_open": "still open",
    "marker_unread": "ended (marker not read)",
    "after_marker": "read_committed consumers got them only after the marker",
    "after_marker_dropped": "read_committed consumers got them only after the marker; they stayed while the "
    "transaction's own records were dropped",
    "until_end": "read_committed consumers cannot get them until it ends",
    "interleaved_why": "the partition's log holds records without a transaction (isTransactional false) between this "
    "transaction's first record and its marker",
    # lso_stall
    "stall": "{tp}: the open transaction of {who} (producer id {pid} epoch {epoch}) has held the LSO at offset {lso} "
    "for {age}: {held} offset(s) up to the HW {hw} held back from read_committed consumers",
    "stall_others": "{tp}: the open transaction of {who} (producer id {pid} epoch {epoch}) has held the LSO at offset "
    "{lso} for {age}: {held} offset(s) up to the HW {hw} held back from read_committed consumers, {others} of them "
    "other producers' records",
    "stall_aborts": "{stall}; its coordinator aborts it at {left} from now",
    "who_not_shown": "a transactional id not shown",
    "stall_why": "DescribeProducers lists it with CurrentTransactionStartOffset {lso} = the LSO (ListOffsets "
    "read_committed), open {age}, longer than {threshold}: {source}",
    "threshold_setting": "INSPECTOR_LSO_STALL_MS={ms}",
    "threshold_half": "half its transaction.timeout.ms ({timeout} ms, from its coordinator)",
    "threshold_default": "half of Kafka's default transaction.timeout.ms ({timeout} ms: its coordinator does not "
    "describe this transaction)",
    "held_back": "every read_committed consumer of {tp} stops at offset {lso} (a consumer group's position there or "
    "past it gets nothing) until the transaction ends; read_uncommitted consumers are not held",
}


def is_said(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and value[0] in SENTENCES and isinstance(value[1], dict)


def say(said: Any) -> str:
    """A sentence ([id, {values}]) in English; any other value as text."""
    if not is_said(said):
        return str(said)
    key, values = said
    return SENTENCES[key].format(**{k: say(v) for k, v in values.items()})


def msgid(key: str) -> str:
    """The catalogue's msgid of a sentence: its text with %(name)s for each {name}."""
    return re.sub(r"\{(\w+)\}", r"%(\1)s", SENTENCES[key])
