"""The tap's live page (issue 34), beside /inspect/ and behind its key: what `manage.py tap` reports, read from the
database (`--publish NAME`: any host's tap, one row per name, models.TapReport) or from the file it writes on this
host (`--report FILE`; the server's PLAYGROUND_TAP_REPORT names it), both written every `--report-interval-s` and at
its stop. The tap is a process of its own, in front of the cluster; the page's process only reads what it last
wrote (a file written whole, then renamed: never half a report), so a page costs a read and nothing reaches the
cluster. `?tap=NAME` picks a published tap; without it the page shows the file's report, else the latest published.

Shown: the connections as actors (address, client.id, software, broker, transactional ids, groups), each
transactional id with its producer instances (producer id, epoch, the clients that used it, who fenced it), and the
fences as a timeline (when, which connection's InitProducerId, whose open transaction, the error it got next).
Transactional ids outside INSPECTOR_TRANSACTIONAL_IDS, when that is set, are withheld as the inspector withholds them.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

RECORDING_STATES = {
    "recording": lambda: pgettext("recording", "recording"),
    "stopped": lambda: pgettext("recording", "stopped"),
    "full": lambda: pgettext("recording", "full"),
    "failed": lambda: pgettext("recording", "failed"),
}

CONNECTIONS_MAX = 200  # actors drawn (open ones first); the report has them all
FENCES_MAX = 100
STALE_AFTER_S = 15.0  # a tap reports every few seconds: older than this, the page says it may have stopped


def choose(wanted: str) -> tuple[dict[str, Any] | None, str, list[dict[str, Any]]]:
    """The report to show, the name of its published tap ("": the file's) and the published taps, latest first."""
    from playground.models import TapReport

    now = dt.datetime.now(dt.UTC)
    taps = [{"name": name, "age_s": round(max(0.0, (now - at).total_seconds()))} for name, at in TapReport.latest()]
    names = [t["name"] for t in taps]
    if wanted not in names:
        path = report_path()
        report = read_report(path) if path else None
        if report is not None or not names:
            return report, "", taps
        wanted = names[0]
    row = TapReport.objects.filter(name=wanted).values_list("report", flat=True).first()
    return (row if isinstance(row, dict) else None), wanted, taps


def report_path() -> str:
    return str(getattr(settings, "PLAYGROUND_TAP_REPORT", "") or "").strip()


def read_report(path: str) -> dict[str, Any] | None:
    """The tap's last report, or None when there is none (not written yet, or unreadable)."""
    try:
        report = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) else None


def _allowed(txid: str) -> bool:
    patterns = list(getattr(settings, "INSPECTOR_TRANSACTIONAL_IDS", []) or [])
    return not patterns or any(fnmatch.fnmatchcase(txid, p) for p in patterns)


def _when(ms: Any) -> str:
    if not isinstance(ms, int | float) or ms <= 0:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%H:%M:%S.%f")[:-3]


def _who(client: dict[str, Any] | None) -> dict[str, Any]:
    client = client or {}
    return {
        "connection": client.get("connection"),
        "client_id": client.get("client_id") or "",
        "address": client.get("client") or "",
        "software": client.get("software") or "",
    }


def _software(value: Any) -> str:
    if isinstance(value, dict):
        return f"{value.get('name', '')} {value.get('version', '')}".strip()
    return str(value or "")


def context(report: dict[str, Any], now_ms: int | None = None) -> dict[str, Any]:
    """What the page draws of a report."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    tap = report.get("tap") or {}
    findings = report.get("findings") or []
    fences = [f for f in findings if f.get("finding") == "fence" and _allowed(str(f.get("transactional_id", "")))]
    fenced_conns = {c for f in fences for c in (f.get("fenced") or {}).get("connections", [])}
    fencing_conns = {(f.get("fencing") or {}).get("connection") for f in fences}
    withheld = {str(t) for t in (report.get("transactional_ids") or {}) if not _allowed(str(t))}

    conns = sorted(report.get("connections") or [], key=lambda c: (c.get("closed_ms") is not None, c["connection"]))
    actors = []
    for c in conns[:CONNECTIONS_MAX]:
        producer = (c.get("producer") or [{}])[-1]
        actors.append({
            "connection": c["connection"],
            "address": c.get("client") or "",
            "client_id": c.get("client_id") or "",
            "software": _software(c.get("software")),
            "broker": c.get("broker"),
            "open": c.get("closed_ms") is None,
            "txids": [t for t in c.get("transactional_ids") or [] if _allowed(t)],
            "groups": sorted(c.get("groups") or {}),
            "requests": sum((c.get("requests") or {}).values()),
            "producer_id": producer.get("producer_id"),
            "epoch": producer.get("epoch"),
            "fenced": c["connection"] in fenced_conns,
            "fencing": c["connection"] in fencing_conns,
        })  # fmt: skip

    fenced_by: dict[tuple[str, int], int] = {}
    for f in fences:
        fenced_by[(str(f["transactional_id"]), int((f.get("fenced") or {}).get("instance", -1)))] = int(
            (f.get("fencing") or {}).get("instance", -1)
        )
    txids = []
    for txid, instances in sorted((report.get("transactional_ids") or {}).items()):
        if txid in withheld:
            continue
        rows = [
            {
                "instance": i.get("instance"),
                "producer_id": i.get("producer_id"),
                "epoch": i.get("epoch"),
                "started": _when(i.get("started_ms")),
                "clients": [_who(c) for c in i.get("connections") or []],
                "fenced_by": fenced_by.get((str(txid), int(i.get("instance", -1)))),
            }
            for i in instances
        ]
        txids.append({"id": txid, "instances": rows})

    timeline = []
    for f in sorted(fences, key=lambda f: (f.get("fencing") or {}).get("at_ms") or 0)[-FENCES_MAX:]:
        fencing, fenced, nxt = f.get("fencing") or {}, f.get("fenced") or {}, f.get("next_error") or {}
        timeline.append({
            "when": _when(fencing.get("at_ms")),
            "txid": f["transactional_id"],
            "fencing": _who(fencing.get("client")),
            "epoch": fencing.get("epoch"),
            "fenced": [_who(c) for c in fenced.get("clients") or []],
            "fenced_epoch": fenced.get("epoch"),
            "open_since": _when(fenced.get("transaction_open_since_ms")),
            "error": nxt.get("error") or "",
            "error_api": nxt.get("api") or "",
            "error_when": _when(nxt.get("at_ms")),
        })  # fmt: skip

    reported_ms = int(tap.get("reported_ms") or 0)
    age_s = max(0.0, (now_ms - reported_ms) / 1000) if reported_ms else None
    recording = report.get("recording") or {}
    return {
        "upstream": tap.get("upstream") or "",
        "bootstrap": tap.get("bootstrap") or "",
        "started": _when(tap.get("started_ms")),
        "reported": _when(reported_ms),
        "age_s": round(age_s) if age_s is not None else None,
        "stale": age_s is None or age_s > STALE_AFTER_S,
        "actors": actors,
        "actors_not_drawn": max(0, len(conns) - CONNECTIONS_MAX),
        "open": sum(1 for c in conns if c.get("closed_ms") is None),
        "txids": txids,
        "withheld": len(withheld),
        "fences": timeline,
        "shared": sum(1 for f in findings if f.get("finding") == "shared_transactional_id"),
        "outside": sum(1 for f in findings if f.get("finding") == "outside_transaction"),
        "recording": {"path": recording.get("path") or "", "state": _recording_state(recording.get("state"))},
    }


def _recording_state(state: Any) -> str:
    said = RECORDING_STATES.get(str(state or ""))
    return said() if said is not None else ""


def unavailable(path: str) -> str:
    """Why there is nothing to show (the page says it)."""
    if not path:
        return _(
            "No tap has reported: start `manage.py tap --publish`, or set PLAYGROUND_TAP_REPORT to the file "
            "`manage.py tap --report` writes."
        )
    return _("The tap has not written %(path)s yet: start `manage.py tap --report %(path)s`.") % {"path": path}
