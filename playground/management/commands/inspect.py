"""`python manage.py inspect [--topic T ...] [--partition P ...] [--transactional-id ID ...] [--since DURATION] [--json]`

Read-only inspection of the Kafka cluster in settings (KAFKA_BOOTSTRAP_SERVERS), with playground/inspector: the
topics' partitions around their LSO and end, the transactional ids' __transaction_state timelines, hanging
transactions as `kafka-transactions.sh find-hanging` finds them (with the abort command, shown, never run), and
findings: first one line per group of findings (kind and subject, with a count, first and last seen and how sure),
then the details. Without --topic and --transactional-id it starts from ListTransactions (ongoing transactions of allowed
ids) and every topic INSPECTOR_TOPICS allows.

Exit codes: 0 no finding, 1 at least one finding, 2 the cluster cannot be read, or a topic/id is not allowed
(one line on stderr, no traceback; --traceback shows one for an unexpected failure).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from django.core.management.base import BaseCommand

from playground.inspector import InspectorError, get_inspector
from playground.inspector.detectors import group_line

EXIT_FINDINGS, EXIT_UNREADABLE = 1, 2
ENTRIES_SHOWN, TIMELINE_SHOWN, OFFSETS_SHOWN, FINDINGS_SHOWN = 12, 15, 20, 5  # the text's lists; --json has all
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*", text or "")
    if not m:
        raise ValueError(f"bad duration {text!r} (examples: 90s, 15m, 2h, 1d)")
    return float(m.group(1)) * UNITS[m.group(2) or "s"]


def _offsets(records: list[dict]) -> str:
    shown = [x["offset"] for x in records[:OFFSETS_SHOWN]]
    if len(records) > OFFSETS_SHOWN:
        return f"{shown} (the first {OFFSETS_SHOWN} of {len(records)})"
    return str(shown)


def _when(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%H:%M:%S.%f")[:-3]


class Command(BaseCommand):
    help = "Inspect transactions on the Kafka cluster in settings (read-only): logs around the LSO, __transaction_state, find-hanging, findings."
    requires_system_checks: list[str] = []  # needs neither URLs, models nor the database

    def add_arguments(self, parser):
        parser.add_argument(
            "--topic", action="append", default=[], help="a topic (repeat); must match INSPECTOR_TOPICS"
        )
        parser.add_argument(
            "--partition", action="append", type=int, default=[], help="only these partitions of the topics (repeat)"
        )
        parser.add_argument(
            "--transactional-id",
            action="append",
            default=[],
            dest="txids",
            help="a transactional id (repeat); must match INSPECTOR_TRANSACTIONAL_IDS",
        )
        parser.add_argument(
            "--since",
            default=None,
            help="only findings and timeline records younger than this (90s, 15m, 2h, 1d); "
            "also how far back __transaction_state is read",
        )
        parser.add_argument("--json", action="store_true", help="print the whole report as JSON")

    def _fail(self, message: str) -> None:
        self.stderr.write(message.splitlines()[0] if message else "inspect failed")
        raise SystemExit(EXIT_UNREADABLE)

    def handle(self, *args, **options):
        since_s = None
        if options["since"]:
            try:
                since_s = parse_duration(options["since"])
            except ValueError as e:
                self._fail(str(e))
        try:
            overrides = {"txn_log_lookback_s": since_s} if since_s else {}
            insp = get_inspector(**overrides)
            partitions = dict.fromkeys(options["topic"], options["partition"]) if options["partition"] else None
            report = insp.inspect(
                options["topic"], options["txids"], partitions=partitions, since_s=since_s, max_age_s=0
            )
        except InspectorError as e:
            self._fail(f"inspect: {e}")
        except Exception as e:
            if options.get("traceback"):
                raise
            self._fail(f"inspect: unexpected {type(e).__name__}: {e}")
        if options["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False, indent=2, default=str))
        else:
            self._print(report)
        if report["findings"]:
            raise SystemExit(EXIT_FINDINGS)

    def _print(self, r) -> None:
        out = self.stdout.write
        out(
            f"Kafka cluster {r['cluster']['bootstrap']} (brokers {', '.join(map(str, r['cluster']['brokers']))}), "
            f"read in {r['elapsed_ms']} ms; started from {r['started_from'].replace('_', ' ')}"
        )
        for note in r["notes"]:
            out(f"note: {note}")
        groups = r.get("groups") or []
        if groups:
            # one line per group first: what an alert shows; the details follow
            out(f"{len(r['findings'])} finding(s) in {len(groups)} group(s), current conditions first, then newest:")
            for g in groups:
                out(group_line(g, _when))
        for p in r["partitions"]:
            name = f"{p['topic']}-{p['partition']}"
            if p["error"]:
                out(f"{name}: {p['error']}")
                continue
            windows = ", ".join(f"[{w['start']},{w['end']})" for w in p["windows"]) or "-"
            out(
                f"{name}: log start {p['log_start_offset']}  LSO {p['last_stable_offset']}  HW {p['high_watermark']}  "
                f"(LEO not visible to clients)  windows {windows}"
            )
            for o in p["open_transactions"]:
                age = f"{o['age_ms'] / 1000:.1f} s" if o["age_ms"] is not None else "?"
                out(
                    f"    open transaction: producer id {o['producer_id']} epoch {o['producer_epoch']} from offset {o['start_offset']}, "
                    f"{age} old{' (holds the LSO)' if o['holds_lso'] else ''}; id {o['transactional_id'] or '?'}; "
                    f"coordinator {o['coordinator_state'] or '?'}"
                )
            if len(p["entries"]) > ENTRIES_SHOWN:
                out(f"    (the last {ENTRIES_SHOWN} of {len(p['entries'])} entries read; --json has them all)")
            for e in p["entries"][-ENTRIES_SHOWN:]:
                if e["kind"] == "control":
                    out(
                        f"    {e['offset']:>8}  {e['control']:<6} pid {e['producer_id']} epoch {e['producer_epoch']} coordinator epoch {e['coordinator_epoch']}"
                    )
                else:
                    out(
                        f"    {e['offset']:>8}  {e['fate']:<9} pid {e['producer_id']} epoch {e['producer_epoch']} "
                        f"{e['producer']:<13} {e['key']!s:>8} = {e['value']}"
                    )
            c = p["consumers"]
            out(
                f"    from offset {c['from_offset']}: read_committed gets {_offsets(c['read_committed'])}, "
                f"read_uncommitted {_offsets(c['read_uncommitted'])}"
            )
        for t in r["transactional_ids"]:
            cur = t["current"]
            out(
                f"{t['transactional_id']}: {cur.get('state') or 'unknown to the coordinator'}"
                + (f", producer id {cur['producer_id']} epoch {cur['producer_epoch']}" if cur.get("state") else "")
                + f"; coordinator: broker {t['coordinator']['broker']}, __transaction_state-{t['coordinator']['txn_state_partition']}"
            )
            if len(t["timeline"]) > TIMELINE_SHOWN:
                out(f"    (the last {TIMELINE_SHOWN} of {len(t['timeline'])} __transaction_state records read)")
            for rec in t["timeline"][-TIMELINE_SHOWN:]:
                parts = ",".join(f"{a}-{b}" for a, b in rec.get("partitions", []))
                out(
                    f"    {_when(rec.get('last_update_ms'))}  {rec['event']:<16} {rec['state']:<14} pid {rec['producer_id']} "
                    f"epoch {rec['epoch']} {parts}"
                )
        if r["hanging"]:
            out("find-hanging:")
            for h in r["hanging"]:
                out(
                    f"    {h['topic']}-{h['partition']} pid {h['producer_id']} epoch {h['producer_epoch']} from offset "
                    f"{h['current_txn_start_offset']}: {h['verdict']} ({h['reason']})"
                )
                out(f"      {h['command']}")
        if not r["findings"]:
            out("no findings")
            return
        out(f"{len(r['findings'])} finding(s):")
        for g in groups:
            out(group_line(g, _when))
            out(f"    why ({g['confidence']}): {g['why']}")
            if g.get("command"):
                out(f"    to abort it (not run): {g['command']}")
            shown = g["findings"][:FINDINGS_SHOWN]
            for f in shown:
                out(f"    {_when(f['time_ms'])}  {f['summary']}")
            left = g["count"] - len(shown)
            if left:
                out(f"    … {left} older finding(s) of this group not listed (--json has {g['count'] - g['more']})")
