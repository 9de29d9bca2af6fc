"""Watch your own cluster: a read-only inspector of the Kafka cluster named in settings.

For topics and transactional ids allowed by INSPECTOR_TOPICS / INSPECTOR_TRANSACTIONAL_IDS (fnmatch patterns), or
starting from ListTransactions: each partition's log around its LSO and its end (data batches with producer id,
epoch and the transactional flag, COMMIT/ABORT markers), HW and LSO, the open transactions holding the LSO, what
read_committed and read_uncommitted consumers get from an offset; each transactional id's __transaction_state
timeline and producer states; hanging transactions as `kafka-transactions.sh find-hanging` finds them, with the
abort command (shown, never run); and findings of transactional ids shared between live instances, re-initialised
too often, and plain records interleaved into transactions.

Entry points (see observer.py):

    from playground.inspector import get_inspector
    insp = get_inspector()                       # the process-wide one for KAFKA_BOOTSTRAP_SERVERS
    report = insp.inspect(["orders"], ["order-pay"])   # dict: partitions, transactional_ids, hanging, findings
    insp.partition_view("orders", 0, from_offset=42)
    insp.transactional_id_view("order-pay")
    insp.find_hanging(["orders"])
    sub = insp.subscribe(callback, ["orders"])   # callback(report) every INSPECTOR_POLL_INTERVAL_S; sub.close()

Modules: config.py (settings, allow-lists, value rendering), client.py (the read-only protocol client),
logview.py (windows, transactions, consumption), txnlog.py (__transaction_state timelines), hanging.py
(find-hanging), detectors.py (findings), observer.py (the shared inspector).
"""

from playground.inspector.config import InspectorError, InspectorSettings, RefusedError, load_settings
from playground.inspector.detectors import KINDS, Finding
from playground.inspector.observer import ClusterInspector, Subscription, forget_inspectors, get_inspector

__all__ = [
    "KINDS",
    "ClusterInspector",
    "Finding",
    "InspectorError",
    "InspectorSettings",
    "RefusedError",
    "Subscription",
    "forget_inspectors",
    "get_inspector",
    "load_settings",
]
