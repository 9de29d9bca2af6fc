"""The anomaly checker's findings and a group's rebalance causes in the language of the page being rendered
(playground/scenario/anomalies.py and sim/groupstate.py say them in English): `{% load findingtags %}`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from playground.web.templatetags.playground import _a, fate_word

register = template.Library()

RULE_WORDS = {
    "lost-write": gettext_lazy("lost-write"),
    "lost-input": gettext_lazy("lost-input"),
    "aborted-told": gettext_lazy("aborted-told"),
    "failed-write-visible": gettext_lazy("failed-write-visible"),
    "duplicate": gettext_lazy("duplicate"),
    "aborted-read": gettext_lazy("aborted-read"),
    "undecided-read": gettext_lazy("undecided-read"),
    "divergence": gettext_lazy("divergence"),
    "race-ending": gettext_lazy("race-ending"),
}


FINDING_STEPS_SHOWN = 8  # step buttons under a finding


def _more(items: list[str], more: int) -> str:
    text = ", ".join(items)
    return _("%(list)s and %(n)s more") % {"list": text, "n": more} if more else text


def _where(where: list[list[str]], more: int) -> str:
    if not where:
        return _("it is in no partition's log")
    return _more([f"{r} ({fate_word(f)})" for r, f in where], more)


def finding_sentence(kind: str, params: Mapping[str, Any]) -> str:
    """One finding as a sentence: the same as anomalies.english(), through the catalogue."""
    from django.utils.translation import ngettext

    p = dict(params)
    if "where" in p:
        p["where"] = _where(p["where"], p.get("where_more", 0))
    if "records" in p:
        p["records"] = _more(list(p["records"]), p.get("records_more", 0))
    said = {
        "produce_ok": _("produce() returned ok"),
        "produce_commit_ok": _("produce() returned ok, and commit_transaction() returned ok"),
        "send": _("send() returned"),
        "send_get": _("send().get() returned"),
        "send_commit": _("send() returned, and commitTransaction() returned"),
        "send_get_commit": _("send().get() returned, and commitTransaction() returned"),
    }
    if "said" in p:
        p["said"] = said.get(p["said"], p["said"])
    ops = {
        "commit": _("commit_transaction() returned %(outcome)s"),
        "produce": _("produce() returned %(outcome)s"),
        "commit_java": _("commitTransaction() threw %(outcome)s"),
        "produce_java": _("send() threw %(outcome)s"),
        "produce_get_java": _("send().get() threw %(outcome)s"),
        "fenced": _("its client raised the fatal error %(outcome)s"),
        "fenced_java": _("its client threw %(outcome)s"),
    }
    if "op" in p:
        p["op"] = ops.get(p["op"], p["op"]) % {"outcome": p.get("outcome")}
    if kind == "race_offsets_first":
        return (
            _(
                "%(actor)s (kafka-clients, transactional.id %(txid)s) was fenced on AddOffsetsToTxn: its "
                "sendOffsetsToTransaction threw ProducerFencedException at once. This is the ending of the race in which "
                "a Spring listener (stopContainerWhenFenced false) does not roll back: the rest of that poll is skipped, "
                "and the next transaction commits its offsets past it."
            )
            % p
        )
    if kind == "race_partitions_first":
        return (
            _(
                "%(actor)s (kafka-clients, transactional.id %(txid)s) was fenced on AddPartitionsToTxn, and sent no "
                "AddOffsetsToTxn after it: kafka-clients neither sends nor fails an AddOffsetsToTxn queued behind that "
                "fatal error, so a sendOffsetsToTransaction of that transaction blocked max.block.ms and threw "
                "TimeoutException. This is the ending of the race in which a Spring listener rolls back and reads the "
                "records again: nothing is lost."
            )
            % p
        )
    if kind == "lost":
        return (
            _(
                "%(actor)s was told its send of %(value)s to %(topic)s succeeded (%(said)s), but read_committed does not "
                "deliver it: %(where)s"
            )
            % p
        )
    if kind == "aborted_told":
        p["values"] = _more(list(p["values"]), p.get("values_more", 0))
        p["topics"] = ", ".join(p["topics"])
        return (
            ngettext(
                "%(actor)s's send of %(values)s to %(topics)s was aborted, and the application was told at step %(k)s "
                "(%(op)s): %(where)s",
                "%(actor)s's sends of %(values)s to %(topics)s were aborted, and the application was told at step %(k)s "
                "(%(op)s): %(where)s",
                len(params["values"]),
            )
            % p
        )
    if kind == "told_failed_visible":
        return (
            _("%(actor)s was told its send of %(value)s failed (%(outcome)s), yet it was committed at %(records)s") % p
        )
    if kind == "aborted_visible":
        return (
            _(
                "%(actor)s aborted the transaction its send of %(value)s belonged to, yet it was committed at %(records)s"
            )
            % p
        )
    if kind == "aborted_read":
        return _("%(actor)s (read_committed) got %(value)s at %(record)s, a record of an aborted transaction") % p
    if kind == "undecided_read":
        return (
            _(
                "%(actor)s (read_committed) got %(record)s while the last stable offset was %(lso)s: data of an "
                "undecided transaction"
            )
            % p
        )
    if kind == "redelivered":
        return (
            _(
                "%(actor)s got %(value)s at %(record)s %(times)s times (redelivered: its position went back, after a "
                "crash or a seek)"
            )
            % p
        )
    if kind == "written_twice":
        return (
            _(
                "%(actor)s got %(value)s from %(count)s records of %(topic)s (%(records)s): it was written and committed "
                "more than once"
            )
            % p
        )
    if kind == "processed_twice":
        return (
            _("%(input)s of %(source)s was processed %(count)s times: read_committed delivers its output %(records)s")
            % p
        )
    if kind == "input_lost":
        p["inputs"] = _more(list(p["inputs"]), p.get("inputs_more", 0))
        how = {
            "txn": _("in its transaction, with send_offsets_to_transaction"),
            "commit": _("an offset commit"),
        }
        p["how"] = how.get(p["how"], p["how"])
        return (
            _(
                "%(actor)s committed %(consumer)s's offsets past %(inputs)s of %(source)s at step %(k)s (%(how)s), yet no "
                "output of theirs to %(sink)s is delivered: the transform skipped them"
            )
            % p
        )
    if kind == "divergence":
        p["failed"] = ", ".join(p["failed"])
        return _("the reconciliation's row %(row)s fails %(failed)s: the database and Kafka disagree") % p
    return ""


@register.simple_tag
def rebalance_cause(c: Mapping[str, Any]) -> str:
    """Why a group's members changed (sim/groupstate.py's causes), with the member concerned."""
    who = {"member": str(c.get("member") or "")}
    said = {
        "join": _("%(member)s joined"),
        "rejoin": _("%(member)s joined again"),
        "leave": _("%(member)s left (LeaveGroup)"),
        "session timeout": _("%(member)s's session timed out"),
        "static rejoin": _("static member %(member)s took its place again"),
        "sync timeout": _("members that did not sync in time were removed"),
    }.get(str(c.get("cause")))
    return said % who if said else str(c.get("cause"))  # a simple_tag's text: the template escapes it


@register.simple_tag
def finding(f: Mapping[str, Any]) -> str:
    """One finding of the anomalies panel: its rule, Elle's name, the sentence, and buttons to its steps."""
    cls = f"finding r-{_a(f['rule'])}" + (" notice" if f.get("notice") else "")
    elle = (
        f' <span class="elle" title="{_a(_("the anomaly’s name in Elle, Jepsen’s checker"))}">{_a(f["anomaly"])}</span>'
        if f.get("anomaly")
        else ""
    )
    out = [
        f'<div class="{cls}"><p><span class="rule">{_a(str(RULE_WORDS.get(f["rule"], f["rule"])))}</span>{elle} {_a(finding_sentence(f["kind"], f["params"]))}</p>'
    ]
    steps = list(f.get("steps") or ())
    if steps:
        tip = _a(_("show this step on the time slider"))
        buttons = "".join(
            f'<button type="button" class="goto-step" data-step="{n + 1}" title="{tip}">{n + 1}</button>'
            for n in steps[:FINDING_STEPS_SHOWN]
        )
        if len(steps) > FINDING_STEPS_SHOWN:
            buttons += f' <span class="muted">+{len(steps) - FINDING_STEPS_SHOWN}</span>'
        out.append(f'<p class="at">{_a(_("at"))} {buttons}</p>')
    out.append("</div>")
    return mark_safe("".join(out))
