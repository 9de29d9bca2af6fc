from __future__ import annotations

import re
from collections.abc import Mapping
from html import escape as _e
from typing import Any

from django import template
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_noop as N_

from playground.scenario.exercise import is_exercise as _is_exercise
from playground.scenario.i18n import pick as _pick
from playground.web import phrases

register = template.Library()


@register.filter
def pick(text: Any, lang: str) -> str:
    """A {lang: text} dict in the viewer's language (English when missing)."""
    return _pick(text, lang)


@register.simple_tag
def jsi18n(lang: str) -> str:
    """The address of the scripts' catalogue in the page's language (playground/web/jscatalog.py)."""
    from playground.web import jscatalog

    return jscatalog.url(lang)


@register.filter
def is_exercise(scenario: Any) -> bool:
    """Whether a scenario asks questions, has a goal or hints (the gallery offers no comparison of one)."""
    return _is_exercise(scenario)


@register.filter
def clock(ms: Any) -> str:
    """Virtual time as mm:ss.mmm (h:mm:ss.mmm past an hour)."""
    try:
        ms = int(ms)
    except (TypeError, ValueError):
        return "—"
    s, ms = divmod(ms, 1000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}.{ms:03d}" if h else f"{m:02d}:{s:02d}.{ms:03d}"


@register.filter
def dash(value: Any) -> Any:
    return "—" if value is None or value == "" else value


@register.filter
def get(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


# The few words of a step's summary (panels.step_summary) and of an added actor's (panels._add_summary), around
# the step's own values; a database step's summary is its SQL, said as written.
SUMMARY_WORDS = phrases.rules(
    (
        (r"^coordinator of (?P<t>.+)$", N_("coordinator of %(t)s")),
        (r"(?:(?<= )|^)fire-and-forget$", N_("fire-and-forget")),
        (r"(?:(?<= )|^)from (?P<c>\S+)", N_("from %(c)s")),
        (r"(?:(?<= )|^)max (?P<n>\d+)$", N_("max %(n)s")),
        (r"^plain$", N_("plain")),
        (r"(?:(?<=, )|^)group (?P<group>\S+)$", N_("group %(group)s")),
    )
)


@register.filter
def summary(text: Any, label: Any = "") -> str:
    """A step's summary with its few words in the viewer's language (`label`: the step's, app.sql's is SQL)."""
    text = "" if text is None else str(text)
    return text if str(label).endswith(".sql") else phrases.say(SUMMARY_WORDS, text)


@register.filter
def short(value: Any, n: int = 12) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= n else text[: n - 1] + "…"


# A scenario's summary and notes mark a command, an option or a value as `code` (docs/scenario-format.md): pages show
# it as code; a tooltip, having no markup, keeps the backticks (they still say "code" there).
_TICKED = re.compile(r"`([^`\n]+)`")


def prose_html(text: Any) -> str:
    """A scenario text escaped, its `spans` as <code>."""
    return _TICKED.sub(r"<code>\1</code>", _e("" if text is None else str(text), quote=True))


@register.filter
def prose(text: Any, lang: str = "") -> str:
    """A scenario text (a {lang: text} dict when `lang` is given) as HTML, its `spans` as code."""
    return mark_safe(prose_html(_pick(text, lang) if lang else text))


# ---- The hot loops, rendered in Python: one render per event, for every viewer, must stay in single milliseconds.
from django.utils.translation import gettext as _  # noqa: E402
from django.utils.translation import gettext_lazy, pgettext  # noqa: E402


def _a(value: Any) -> str:
    return _e("" if value is None else str(value), quote=True)


TITLE_VALUE_CHARS, TITLE_KEY_CHARS, CELL_TEXT_CHARS = 64, 32, 9  # of a record's value and key in a cell, its hover


def shown(value: Any, n: int) -> str:
    """A value as a page shows it (web/cut.py): at most `n` characters, bytes and invisible characters escaped."""
    from playground.web import cut

    return cut.text(value, n)


OOB = ' hx-swap-oob="true"'


@register.simple_tag
def strips(p: Mapping[str, Any]) -> str:
    return mark_safe("".join(strip(s) for s in p["strips"]))


def strip(s: Mapping[str, Any], oob: bool = False) -> str:
    leader = f"{_a(_('leader'))} b{s['leader']}" if s["leader"] else _a(_("no leader"))
    key = s.get("key", s["tp"])
    deleted = ""
    if s.get("log_start"):
        deleted = f'<small class="deleted">{_a(_("offsets before %(n)s deleted by retention") % {"n": s["log_start"]})}</small>'
    label = f'<b title="{_a(key)}">{_a(key)}</b>'
    if s.get("href"):
        label = f'<a class="tp-link" href="{_a(s["href"])}" title="{_a(_("every offset of %(tp)s, page by page") % {"tp": key})}">{label}</a>'
    return (
        f'<div id="{_a(item_id("strip", key))}"{OOB if oob else ""} class="strip" data-tp="{_a(key)}" data-hw="{s["hw"]}" data-lso="{s["lso"]}" data-leo="{s["leo"]}">'
        f'<div class="strip-label">{label}<small>{leader}</small><small class="marks"><span class="nw">HW {s["hw"]}</span> · <span class="lso nw">LSO {s["lso"]}</span> · <span class="nw">LEO {s["leo"]}</span></small>{deleted}</div>'
        f'<ol class="cells">{strip_cells(s)}</ol></div>'
    )


def _earlier(s: Mapping[str, Any]) -> str:
    """The cell before a strip's first one: how many offsets come before it, which of the marks and positions are
    among them, and (on a session's page) a link to them."""
    n = s["hidden"]
    first = s.get("log_start", 0)
    words = _("earlier: offsets %(a)s–%(b)s not shown") % {"a": first, "b": s.get("earlier_to", first + n - 1)}
    inside = []
    if s.get("lso_before"):
        inside.append('<i class="cur cur-LSO">LSO</i>')
    before = s.get("consumers_before") or {}
    for name in before.get("names", []):
        inside.append(f'<span class="cpos">▲{_a(name)}</span>')
    if before.get("more"):
        inside.append(f'<span class="cpos">+{before["more"]}</span>')
    body = f"…{n}" + "".join(inside)
    if s.get("earlier_href"):
        return f'<li class="more"><a href="{_a(s["earlier_href"])}" title="{_a(words)}">{body}</a></li>'
    return f'<li class="more" title="{_a(words)}">{body}</li>'


def _at_offset(names: Any) -> list[str]:
    """Who fetches from an offset: a list of names (the inspector's), or {"names": [...], "more": n} (a session's)."""
    if isinstance(names, Mapping):
        return list(names.get("names", [])) + ([f"+{names['more']}"] if names.get("more") else [])
    return list(names or [])


@register.simple_tag
def strip_cells(s: Mapping[str, Any]) -> str:
    """One partition's slots: a cell per offset, cursors (HW, LSO, LEO) and consumer positions."""
    out = []
    if s["hidden"]:
        out.append(_earlier(s))
    fates = {
        "committed": _("transaction committed"),
        "aborted": _("transaction aborted"),
        "open": _("transaction still open"),
        "plain": _("not transactional"),
    }
    fetches = _("fetches from here")
    # looked up once per strip, not once per cell (a strip draws dozens, an update several strips)
    marker_title = _("offset %(o)s · %(k)s marker · PID %(pid)s · epoch %(e)s")
    record_title = _("offset %(o)s · PID %(pid)s · epoch %(e)s · sequence %(q)s")
    binary_word = _("binary")
    for c in s["slots"]:
        parts = [
            f'<li class="slot{" end" if c.get("end") else ""}{" cursor" if c["cursors"] else ""}" data-offset="{c["offset"]}">'
        ]
        if c["cursors"]:
            parts.append(
                '<span class="curs">' + "".join(f'<i class="cur cur-{m}">{m}</i>' for m in c["cursors"]) + "</span>"
            )
        colour = f" pc{c['colour']}" if c.get("colour") is not None else ""
        if c.get("end"):
            parts.append('<span class="cell endcell" aria-hidden="true"></span><span class="off"></span>')
        elif c.get("control"):
            title = marker_title % {
                "o": c["offset"],
                "k": c["control"],
                "pid": c["pid"],
                "e": c["epoch"],
            }
            if c.get("owner"):
                title += f" ({c['owner']})"
            parts.append(
                f'<span class="cell marker m-{c["letter"]}{colour}" data-fate="marker" data-control="{_a(c["control"])}" title="{_a(title)}">{_a(c["letter"])}</span><span class="off">{c["offset"]}</span>'
            )
        else:
            title = record_title % {
                "o": c["offset"],
                "pid": dash(c["pid"]),
                "e": dash(c["epoch"]),
                "q": dash(c["sequence"]),
            }
            if c.get("owner"):
                title += f" ({c['owner']})"
            # A value (or key) of up to a KiB in each of a thousand cells' hover would make the page megabytes.
            if c.get("key") is not None:
                title += f" · key {shown(c['key'], TITLE_KEY_CHARS)}"
            binary = binary_word + " " if c.get("binary") else ""
            title += f" · {binary}value {shown(c.get('value'), TITLE_VALUE_CHARS)} · {fates.get(c['fate'], c['fate'])}"
            shade = f" sh{c['shade']}" if c.get("colour") is not None else ""
            parts.append(
                f'<span class="cell f-{c["fate"]}{colour}{shade}" data-fate="{c["fate"]}" title="{_a(title)}">{_a(shown(c["text"], CELL_TEXT_CHARS))}</span><span class="off">{c["offset"]}</span>'
            )
        for n in _at_offset(c["consumers"]):
            parts.append(f'<span class="cpos" title="{_a(n)} {_a(fetches)}">▲{_a(n)}</span>')
        parts.append("</li>")
        out.append("".join(parts))
    return mark_safe("".join(out))


@register.filter
def lane_word(name: Any) -> str:
    """A party of an RPC (a client's name, coordinator(b1), ...) as the timeline names it in the viewer's language."""
    return phrases.lane(str(name or ""))


@register.simple_tag
def timeline_svg(timeline: Mapping[str, Any]) -> str:
    # Laid out here, in the language it is rendered in (diagrams.timeline says its words through phrases). Drawn
    # at the panel's width (width 100% of the viewBox), within the scale the layout allows: narrower, the SVG keeps
    # min-width and the panel scrolls; the hover tips (data-tip) give every name and label in full.
    from playground.web.diagrams import timeline as drawing

    p = drawing(timeline["rows"], timeline["clients"], rows=len(timeline["rows"]))
    size = f'width="100%" style="min-width:{p["min_width"]}px;max-width:{p["max_width"]}px"'
    out = [
        f'<svg class="seq" {size} viewBox="0 0 {p["width"]} {p["height"]}" role="img" aria-label="{_a(_("sequence diagram of the RPCs"))}">',
        '<text x="4" y="20" class="lane t">t (ms)</text>',
    ]
    for lane in p["lanes"]:
        x = f"{lane['x']:.0f}"
        out.append(
            lane_name(lane, x, 14 if len(lane["lines"]) > 1 else 20)
            + f'<line x1="{x}" y1="32" x2="{x}" y2="{p["bottom"]}" class="life"/>'
        )
        if p["foot"]:
            out.append(lane_name(lane, x, p["bottom"] + 14))
    for a in p["arrows"]:
        cls = (
            "msg"
            + (" err" if a["error"] else "")
            + (" resp" if a["response"] else "")
            + (" short" if a["short"] else "")
        )
        out.append(
            f'<g class="{cls}" data-tip="{_a(a["title"])}"><line x1="{a["x1"]:.0f}" y1="{a["y"]}" x2="{a["x2"]:.0f}" y2="{a["y"]}"/>'
            f'<text x="{a["mid"]:.0f}" y="{a["y"] - 4}">{_a(a["label"])}</text><text x="4" y="{a["y"] + 3}" class="t">{a["t"]}</text></g>'
        )
    out.append("</svg>")
    return mark_safe("".join(out))


def lane_name(lane: Mapping[str, Any], x: str, y: int) -> str:
    """A lane's header (one or two lines, maybe shortened); its full name on hover."""
    text = "".join(
        f'<tspan x="{x}" dy="{0 if i == 0 else 12}">{_a(line)}</tspan>' for i, line in enumerate(lane["lines"])
    )
    return f'<text x="{x}" y="{y}" class="lane" data-tip="{_a(lane["name"])}">{text}</text>'


@register.simple_tag
def state_machine_svg(sm: Any, state: str | None, pending: str | None, table: Any = None) -> str:
    if not isinstance(sm, dict):
        from playground.web.diagrams import current_state_machine

        sm = current_state_machine(table)
        if sm is None:
            return ""
    label = _("transaction state machine, current state %(s)s") % {"s": state}
    out = [f'<svg class="sm" viewBox="0 0 {sm["width"]} {sm["height"]}" role="img" aria-label="{_a(label)}">']
    for g in sm["edges"]:
        cls = (
            "edge"
            + (" next" if g.src == state and g.dst != state else "")
            + (" loop" if g.loop else "")
            + (" back" if g.back else "")
        )
        out.append(f'<path d="{g.path}" class="{cls}"><title>{_a(g.src)} → {_a(g.dst)}</title></path>')
    for n in sm["nodes"]:
        cls = "node" + (" lit" if n.name == state else "") + (" pend" if n.name == pending else "")
        out.append(
            f'<g class="{cls}" data-state="{_a(n.name)}"><rect x="{n.x - n.w / 2:.0f}" y="{n.y - n.h / 2:.0f}" width="{n.w:.0f}" height="{n.h:.0f}" rx="12"/>'
            f'<text x="{n.x:.0f}" y="{n.y + 4:.0f}">{_a(n.name)}</text></g>'
        )
    out.append("</svg>")
    return mark_safe("".join(out))


@register.simple_tag
def cmp_tables(p: Mapping[str, Any]) -> str:
    return mark_safe("".join(cmp_table(t, p) for t in p["tables"]))


def cmp_table(t: Mapping[str, Any], p: Mapping[str, Any], oob: bool = False) -> str:
    """One partition: its records, and for each consumer whether it got them or why not (side by side)."""
    hidden = ""
    if t.get("earlier"):
        words = _a(_("earlier: offsets %(a)s–%(b)s not shown") % {"a": t["earlier"][0], "b": t["earlier"][1]})
        hidden = f' · <a href="{_a(t["earlier_href"])}">{words}</a>' if t.get("earlier_href") else f" · {words}"
    key = t.get("key", t["tp"])
    level = {"ru": _a(pgettext("isolation level", "uncommitted")), "rc": _a(pgettext("isolation level", "committed"))}
    heads = "".join(
        f'<th class="{(k := "ru" if c["isolation"] == "read_uncommitted" else "rc")}">{_a(c["name"])}<small>{level[k]}</small></th>'
        for c in p["columns"]
    )
    return (
        f'<table id="{_a(item_id("cmp", key))}"{OOB if oob else ""} class="cmp-table" data-tp="{_a(key)}">'
        f"<caption>{_a(key)} <small>LSO {t['lso']}{hidden}</small></caption>"
        f"<thead><tr><th>{_a(_('offset'))}</th><th>{_a(_('record'))}</th>{heads}</tr></thead>"
        f"<tbody>{cmp_rows(t, t['lso'])}</tbody></table>"
    )


def _status_words(lso: int) -> dict[str, str]:
    return {
        "got": '✓ <span class="sr">' + _a(_("received")) + "</span>",
        "aborted": '<span class="why">✗ ' + _a(_("hidden: aborted")) + "</span>",
        "lso": '<span class="why">◔ ' + _a(_("held: behind LSO %(n)s") % {"n": lso}) + "</span>",
        "pending": '<span class="muted">' + _a(_("not polled yet")) + "</span>",
        "skipped": '<span class="muted">' + _a(_("skipped")) + "</span>",
        "past": '<span class="muted" title="'
        + _a(_("its position is past this record; which records it received this far back is no longer kept"))
        + '">'
        + _a(_("read past"))
        + "</span>",
        "na": '<span class="muted">—</span>',
    }


@register.simple_tag
def status_cells(r: Mapping[str, Any], lso: int, words: Mapping[str, str] | None = None) -> str:
    """A record's row's cells: whether each consumer got it, or why not (`words`: a table's, looked up once)."""
    words = words or _status_words(lso)
    return mark_safe("".join(f'<td class="s-{c["status"]}">{_status(c, words)}</td>' for c in r["cells"]))


def _status(cell: Mapping[str, Any], words: Mapping[str, str]) -> str:
    if cell["status"] == "ask":
        return f'<span class="muted" data-ask="{cell["ask"]}">{_a(ask_first(cell["ask"]))}</span>'
    return words.get(cell["status"], "")


def ask_first(number: int) -> str:
    """What a client shows instead of what would answer the open question (question `number`)."""
    return _("answer question %(n)s to see") % {"n": number}


@register.simple_tag
def cmp_rows(t: Mapping[str, Any], lso: int) -> str:
    out = []
    words = _status_words(lso)
    for r in t["rows"]:
        key = f"{_a(shown(r['key'], 10))}=" if r.get("key") else ""
        binary = f' title="{_a(_("binary value"))}"' if r.get("binary") else ""
        value = _a(shown(r["value"], 16))
        if r.get("href"):
            value = f'<a href="{_a(r["href"])}">{value}</a>'
        cells = status_cells(r, lso, words)
        out.append(
            f'<tr class="f-{r["fate"]}"><td class="num">{r["offset"]}</td><td class="rec"><span class="v"{binary}>{key}{value}</span> <small>{_a(r["by"])}</small></td>{cells}</tr>'
        )
    return mark_safe("".join(out))


@register.simple_tag
def narrative_steps(steps: list[Any], lang: str) -> str:
    expected = _("as the scenario expects")
    out = []
    for s in steps:
        cls = " ".join(
            c
            for c, on in (("done", s["done"]), ("current", s["current"]), ("next", s["next"]), ("note", s["note"]))
            if on
        )
        if s.get("hidden"):  # an exercise's note that explains a question not revealed yet
            cls = f"note held {cls}".strip()
        attrs = (f' class="{cls}"' if cls else "") + (' aria-current="step"' if s["current"] else "")
        body = [f'<li{attrs} data-step="{s["k"]}"><span class="i">{s["k"]}</span>']
        if s.get("hidden"):
            body.append(
                f'<span class="ntext">{_a(_("… shown once the question before it is answered and its step has run"))}</span>'
            )
        elif s["note"]:
            # a past note is cut to a line, a step's arguments to what fits: playground.js gives a cut one its whole
            # text as a tooltip when the pointer reaches it (the page does not carry every text twice)
            body.append(f'<span class="ntext">{prose_html(pick(s["note"], lang))}</span>')
        else:
            body.append(f"<code>{_a(s['label'])}</code>")
            if s["args"]:
                body.append(f' <span class="args">{_a(summary(s["args"], s["label"]))}</span>')
            want = " / ".join(s["expect"] or ())
            if s["done"]:
                err = "" if s["outcome"] == "ok" else " err"
                body.append(f' <span class="oc{err}">→ {_a(s["outcome"])}</span>')
                if s["as_expected"] is True:
                    body.append(f'<span class="exp ok" title="{_a(expected)}">✓</span>')
                elif s["as_expected"] is False:
                    body.append(f'<span class="exp bad">✗ {_a(_("expected"))} {_a(want)}</span>')
            elif want:
                body.append(f' <span class="exp want">{_a(_("expect"))} {_a(want)}</span>')
        body.append("</li>")
        out.append("".join(body))
    return mark_safe("".join(out))


# The listener's entries of the command log (session/external.py's labels, and why it closed), in the viewer's words.
LISTENER_WORDS = {
    "listen": gettext_lazy("listener opened"),
    "unlisten": gettext_lazy("listener closed"),
    "stopped": gettext_lazy("stopped"),
    "idle": gettext_lazy("idle"),
    "closed": gettext_lazy("closed"),
}


# The anomaly checker's rules (scenario/anomalies.py's RULES): the rule's own name in English, said in Chinese.
@register.simple_tag
def mine_rows(mine: list[Any]) -> str:
    """The narrative's list of the user's own commands (up to panels.MINE_ROWS): it changes with every command, so
    the narrative is rendered after nearly every one."""
    if not mine:
        return mark_safe(f'<li class="muted">{_a(_("Nothing yet: add a producer, then click its buttons."))}</li>')
    listener = _a(_("requests of applications connected to the session’s listener"))
    out = []
    for m in mine:
        # each row's step as the header and the time slider count it; the listener opening or closing is not a step
        k = m.get("k")
        if k is None:
            number = f'<span class="k" title="{_a(_("not a step: it belongs to the step before it"))}">·</span> '
        else:
            number = f'<span class="k" title="{_a(_("step %(k)s") % {"k": k})}">{k}</span> '
        if m.get("listener"):  # the listener opened (its addresses) or closed (why): the log's own words, translated
            said = LISTENER_WORDS.get(m["listener"], m["listener"])
            why = LISTENER_WORDS.get(m["args"], m["args"]) if m["listener"] == "unlisten" else m["args"]
            row = [f'<li class="extrow" title="{listener}">{number}⇆ <span class="who">{_a(str(said))}</span>']
            row.append(f' <span class="args">{_a(str(why))}</span>' if why else "")
            out.append("".join(row) + f' <span class="oc">→ {_a(m["outcome"])}</span></li>')
            continue
        if m.get("external"):
            row = [f'<li class="extrow" title="{listener}">{number}⇆ <span class="who">{_a(m["label"])}</span>']
        elif m.get("added"):  # an actor added: "+ producer P1", its kind in the viewer's language
            row = [f"<li>{number}+ {_a(kind_word(m['added']))} <code>{_a(m['name'])}</code>"]
        else:
            row = [f"<li>{number}<code>{_a(m['label'])}</code>"]
        if m["args"]:
            row.append(f' <span class="args">{_a(summary(m["args"], m["label"]))}</span>')
        err = "" if m["outcome"] == "ok" else " err"
        row.append(f' <span class="oc{err}">→ {_a(m["outcome"])}</span></li>')
        out.append("".join(row))
    return mark_safe("".join(out))


def _vals(**kw: Any) -> str:
    """data-vals JSON (the command's form fields), escaped for a single-quoted attribute."""
    import json

    text = json.dumps(kw, ensure_ascii=False, separators=(",", ":"))
    return text.replace("&", "&amp;").replace("'", "&#x27;").replace("<", "&lt;")


def _group(url: str, **vals: Any) -> str:
    """A group of buttons' attributes: the URL they post to and the values they all send (playground.js: a button's
    values are its group's with its own over them), said once instead of on each button."""
    return f" data-post=\"{url}\" data-vals='{_vals(**vals)}'"


def _button(url: str | None, label: str, title: str = "", cls: str = "", **vals: Any) -> str:
    """A command's button; url None: it posts to its group's (_group). No title where it would say the label again."""
    c = f' class="{cls}"' if cls else ""
    t = f' title="{_a(title)}"' if title else ""
    post = f' data-post="{url}"' if url else ""
    return f"<button{c}{post} data-vals='{_vals(**vals)}'{t}>{label}</button>"


def item_id(kind: str, key: str) -> str:
    return f"{kind}-{key}"


# What the page saw of a client, in its own words: no Kafka client has these states (tests/web/zhrule.py), so they are
# said in the viewer's language; a client's state as its client names it (READY, IN_TRANSACTION...) is Kafka's.
PAGE_STATES = {
    "FENCED": N_("FENCED"),
    "DISCONNECTED": N_("DISCONNECTED"),
    "RUNNING": N_("RUNNING"),
    "CRASHED": N_("CRASHED"),
    "CLOSED": N_("CLOSED"),
}
KINDS = {"producer": N_("producer"), "consumer": N_("consumer"), "admin": N_("admin client")}


@register.filter
def state_word(state: Any) -> Any:
    """A client's state on a badge (or a value of compare's that may be one): the page's own words translated,
    Kafka's as Kafka names them, any other value as it is."""
    return _(PAGE_STATES[state]) if isinstance(state, str) and state in PAGE_STATES else state


FATES = {"aborted": N_("aborted"), "open": N_("open"), "committed": N_("committed"), "plain": N_("plain")}


@register.filter
def fate_word(fate: Any) -> str:
    """What became of a record (its transaction's fate), in the viewer's language."""
    text = "" if fate is None else str(fate)
    return _(FATES[text]) if text in FATES else text


@register.filter
def kind_word(kind: Any) -> str:
    text = "" if kind is None else str(kind)
    return _(KINDS[text]) if text in KINDS else text


@register.simple_tag
def producer_cards(p: Mapping[str, Any], u: Mapping[str, Any]) -> str:
    return mark_safe("".join(producer_card(c, p, u) for c in p["cards"]))


def producer_card(c: Mapping[str, Any], p: Mapping[str, Any], u: Mapping[str, Any], oob: bool = False) -> str:
    topic = p["topics"][0]["name"] if p["topics"] else ""
    crash_t, restart_t = (
        _("the process dies: no abort, no close"),
        _("a new client with the same configuration (init again)"),
    )
    name = c["name"]
    colour = f" pc{c['colour']}" if c["colour"] is not None else ""
    txid = (
        f"transactional.id <code>{_a(c['txid'])}</code>" if c["txid"] else _a(_("plain: idempotent, no transactions"))
    )
    badge = _a(ask_first(c["ask"]) if c.get("ask") else state_word("FENCED" if c["fenced"] else c["state"]))
    external = " external" if c.get("external") is not None else ""
    parts = [
        f'<article id="{_a(item_id("pc", name))}"{OOB if oob else ""} class="pcard tone-{c["tone"]}{" fenced" if c["fenced"] else ""}{external}" data-producer="{_a(name)}">',
        f'<header><span class="swatch{colour}" aria-hidden="true"></span><b class="pname">{_a(name)}</b> <span class="txid">{txid}</span></header>',
        f'<div class="ids"><span>PID <b>{_a(dash(c["pid"]))}</b> · epoch <b>{_a(dash(c["epoch"]))}</b></span>'
        f'<span class="badge tone-{c["tone"]}" data-state="{_a(c["state"])}">{badge}</span></div>',
    ]
    err = c["last_error"]
    if err:
        old = "" if c["tone"] in ("bad", "warn") else " old"
        # the client's own message, as it wrote it (what the application's log says): quoted, in its language
        detail = f' <span class="said" lang="en">({_a(err.get("detail"))})</span>' if err.get("detail") else ""
        parts.append(
            f'<div class="lasterr{old}" role="note"><span class="k">{_a(_("last error"))}</span> <code>{_a(err.get("op"))}</code> → <b>{_a(err.get("error"))}</b>{detail}</div>'
        )
    k = c["counters"]
    sent, landed, rc = k.get("app_sent_ok", 0), k.get("landed", 0), k.get("read_committed_received", 0)
    ext = c.get("external")
    if ext is not None:
        # an application of its own, connected to the session's listener: what it sent, no buttons of ours
        text = _("sent <b>%(s)s</b> · landed <b>%(l)s</b> · committed <b>%(r)s</b>") % {"s": sent, "l": landed, "r": rc}
        parts.append(f'<div class="counters" data-sent="{sent}" data-landed="{landed}" data-rc="{rc}">{text}</div>')
        parts.append(_external_line(ext))
        parts.append("</article>")
        return "".join(parts)
    text = _("app believes sent <b>%(s)s</b> · landed <b>%(l)s</b> · read_committed got <b>%(r)s</b>") % {
        "s": sent,
        "l": landed,
        "r": rc,
    }
    parts.append(f'<div class="counters" data-sent="{sent}" data-landed="{landed}" data-rc="{rc}">{text}</div>')
    label = _a(_("actions of %(n)s") % {"n": name})
    b = [f'<div class="actions" role="group" aria-label="{label}"{_group(u["action"], actor=name)}>']
    if c["transactional"]:
        b.append(_button(None, "init", "init_transactions: InitProducerId", action="init_transactions"))
        b.append(_button(None, "begin", "begin_transaction", action="begin_transaction"))
    b.append(
        _button(
            u["produce"],
            "produce",
            _("produce “%(v)s” to %(t)s") % {"v": c["next_value"], "t": topic},
            topic=topic,
            value=c["next_value"],
        )
    )
    b.append(
        f'<button class="open-produce" type="button" data-actor="{_a(name)}" data-value="{_a(c["next_value"])}" title="{_a(_("produce: choose topic, partition, key, value, await"))}">…</button>'
    )
    b.append(_button(None, "flush", action="flush"))
    if c["transactional"]:
        for g in p["group_consumers"]:
            b.append(
                _button(
                    None,
                    f"offsets·{_a(g)}",
                    f"send_offsets_to_transaction: {g}",
                    action="send_offsets_to_transaction",
                    consumer=g,
                )
            )
        b.append(
            _button(
                None,
                "commit",
                "commit_transaction: EndTxn(commit)",
                "commit",
                action="commit_transaction",
            )
        )
        b.append(
            _button(
                None,
                "abort",
                "abort_transaction: EndTxn(abort)",
                "abort",
                action="abort_transaction",
            )
        )
    b.append(_button(None, "crash", crash_t, "danger", action="crash"))
    b.append(_button(None, "restart", restart_t, action="restart"))
    b.append(_button(None, "close", action="close"))
    b.append("</div>")
    parts.append("".join(b))
    parts.append("</article>")
    return "".join(parts)


def _external_line(ext: Mapping[str, Any]) -> str:
    """An external client's line: its own application, its client.id, library and version, connected or not."""
    software = " ".join(x for x in (ext.get("library"), ext.get("version")) if x) or _("library not announced")
    state = _("connected") if ext.get("connected") else _("disconnected")
    return (
        f'<div class="extline" data-connected="{"yes" if ext.get("connected") else "no"}">'
        f'<span class="extbadge" title="{_a(_("an application of your own, connected to this session’s listener"))}">'
        f"{_a(_('your app'))}</span> client.id <code>{_a(ext.get('client_id') or '—')}</code> · "
        f'<span class="software" translate="no">{_a(software)}</span> · <span class="conn">{_a(state)}</span></div>'
    )


@register.simple_tag
def consumer_cards(cards: list[Any], u: Mapping[str, Any]) -> str:
    out = []
    for c in cards:
        name = c["name"]
        group = f' <span class="grp">{_a(_("group"))} <code>{_a(c["group"])}</code></span>' if c["group"] else ""
        tone = "tone-ok" if c["state"] == "RUNNING" else "tone-bad"
        pos = "".join(f"<span>{_a(tp)}@<b>{o}</b></span>" for tp, o in c["positions"])
        if c.get("positions_more"):
            pos += f'<span class="muted">+{c["positions_more"]}</span>'
        from django.utils.translation import ngettext

        got = ngettext("%(n)s record received", "%(n)s records received", c["received"]) % {"n": c["received"]}
        ext = c.get("external")
        if ext is not None:
            tone = "tone-ok" if ext.get("connected") else "tone-off"
            out.append(
                f'<article class="ccard external{"" if ext.get("connected") else " down"}" data-consumer="{_a(name)}">'
                f'<header><b>{_a(name)}</b>{group} <span class="badge {tone}">{_a(state_word(c["state"]))}</span></header>'
                f'<div class="pos">{pos} · {_a(got)}</div>{_external_line(ext)}</article>'
            )
            continue
        b = [_button(None, "poll", action="poll")]
        if c["group"]:
            b.append(_button(None, "commit", action="commit"))
            b.append(_button(None, "seek", "seek_to_committed", action="seek_to_committed"))
        b.append(_button(None, "crash", cls="danger", action="crash"))
        b.append(_button(None, "restart", action="restart"))
        out.append(
            f'<article class="ccard{"" if c["state"] == "RUNNING" else " down"}" data-consumer="{_a(name)}"><header><b>{_a(name)}</b>{group} '
            f'<span class="badge {tone}">{_a(state_word(c["state"]))}</span></header><div class="pos">{pos} · {_a(got)}</div>'
            f'<div class="actions"{_group(u["action"], actor=name)}>{"".join(b)}</div></article>'
        )
    return mark_safe("".join(out))


@register.filter
def index(sequence: Any, i: int) -> Any:
    try:
        return sequence[int(i)]
    except (IndexError, TypeError, ValueError):
        return None


def _listed(values: Any) -> str:
    if isinstance(values, list):
        return "[" + ", ".join("null" if v is None else str(v) for v in values) + "]"
    if isinstance(values, dict):
        return ", ".join(f"{k} {v}" for k, v in values.items())
    return "null" if values is None else str(values)


@register.simple_tag
def goal_item(item: Mapping[str, Any]) -> str:
    """One check of an exercise's goal as a sentence, with what the session shows now when it does not hold yet."""
    kind, subject, wanted = item["kind"], item["subject"].split(" "), item["wanted"]
    if item.get("hidden"):  # an exercise still asking questions: what to reach, without the values
        return mark_safe(f'<span class="goal-text held">{_a(_held_goal(kind, subject))}</span>')
    if kind == "consumers":
        text = _("%(c)s got %(v)s from %(tp)s") % {"c": subject[0], "v": _listed(wanted), "tp": subject[1]}
    elif kind == "logs":
        text = _("%(tp)s holds %(v)s") % {"tp": subject[0], "v": _listed(wanted)}
    elif kind == "watermarks":
        marks = {"high_watermark": "HW", "last_stable_offset": "LSO"}
        text = f"{subject[0]}: " + ", ".join(f"{marks.get(k, k)} {v}" for k, v in wanted.items())
    elif kind == "transactions":
        keys = {"state": _("state"), "producer": _("producer")}  # the format's keys, said; epoch is Kafka's word
        text = f"{subject[0]}: " + ", ".join(f"{keys.get(k, k)} {v}" for k, v in wanted.items())
    else:  # groups
        text = _("group %(g)s committed %(o)s on %(tp)s") % {"g": subject[0], "o": _listed(wanted), "tp": subject[1]}
    out = f'<span class="goal-text">{_a(text)}</span>'
    if not item["ok"]:
        out += f' <span class="now">{_a(_("now"))}: {_a(_listed(item["seen"]))}</span>'
    return mark_safe(out)


def _held_goal(kind: str, subject: list[str]) -> str:
    if kind == "consumers":
        return _("what %(c)s reads from %(tp)s") % {"c": subject[0], "tp": subject[1]}
    if kind == "logs":
        return _("what %(tp)s holds") % {"tp": subject[0]}
    if kind == "watermarks":
        return _("%(tp)s: where its HW and LSO end up") % {"tp": subject[0]}
    if kind == "transactions":
        return _("how the transaction of %(t)s ends") % {"t": subject[0]}
    return _("what group %(g)s commits on %(tp)s") % {"g": subject[0], "tp": subject[-1]}


@register.inclusion_tag("playground/_profile.html")
def profile_select(chosen: Any = None) -> dict[str, Any]:
    """The profile's two choices for a Play form: the Kafka version (its exact release shown) and the client (java:
    kafka-clients of the cluster's release, or of the one named), `chosen` (a spec.Profile) selected; without one, a
    first option "as the file says" (its `profile:`)."""
    from playground.engine.spec import CLIENT_KEYS, JAVA_RELEASES, KAFKA_RELEASES

    clients = [(c, f"java {JAVA_RELEASES[c[5:]]}" if c.startswith("java:") else c) for c in CLIENT_KEYS]
    return {"versions": list(KAFKA_RELEASES.items()), "clients": clients, "chosen": chosen}
