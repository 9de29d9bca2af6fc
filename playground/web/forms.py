"""The dashboard's inputs. Each form checks types and sizes and names the field that is wrong; what depends on the
session (does actor A exist, has topic orders a partition 5) is checked by `session.validate_step`."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from playground.engine.spec import (
    CLIENT_KEYS,
    CONSUMER_ACTIONS,
    KAFKA_RELEASES,
    PRODUCER_ACTIONS,
    Profile,
    Step,
    parse_profile,
)
from playground.scenario.model import HEADER_NAME_CHARS, PIPELINE_BY
from playground.session import NAME_RE, limits
from playground.session.runner import RUN_STEP_MS_MAX, RUN_STEP_MS_MIN

NAME_MAX = 40
LOG_PAGE_MAX = 1000  # commands of a page of log.json (its bytes are bounded too: limits' log_page_bytes)
TRUE = ("1", "true", "on", "yes")
FALSE = ("0", "false", "off", "no")


def field_said(field: str, message: str) -> str:
    """A field's problem: "partition: Enter a whole number." (the field's name as the form or the address spells
    it)."""
    return _("%(field)s: %(message)s") % {"field": field, "message": message}


def _errors(form: forms.Form, names: dict[str, str] | None = None) -> str:
    """One line naming every bad field (`names`: a field's name as the request spells it, where that differs)."""
    parts = []
    for field, errors in form.errors.items():
        label = (names or {}).get(field, field) if field != "__all__" else ""
        parts.append(field_said(label, " ".join(errors)) if label else " ".join(errors))
    return "; ".join(parts)


class Form(forms.Form):
    def message(self) -> str:
        return _errors(self)


class NameField(forms.CharField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=NAME_MAX, **kwargs)

    def validate(self, value: str) -> None:
        super().validate(value)
        if value and not NAME_RE.match(value):
            raise forms.ValidationError(_("letters, digits, '.', '_' or '-' only"))


class BoolField(forms.Field):
    """true/false, 1/0, on/off; absent -> the default."""

    def __init__(self, default: bool, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)
        self.default = default

    def to_python(self, value: Any) -> bool:
        if value in (None, ""):
            return self.default
        text = str(value).strip().lower()
        if text in TRUE:
            return True
        if text in FALSE:
            return False
        raise forms.ValidationError(_("expected true or false"))


class ProfileForm(Form):
    """A Play form's profile: the Kafka version and the client (`java:3.5`: kafka-clients of another release than
    the cluster's); each left empty keeps the scenario's own."""

    kafka = forms.ChoiceField(required=False, choices=[(v, v) for v in KAFKA_RELEASES])
    client = forms.ChoiceField(required=False, choices=[(c, c) for c in CLIENT_KEYS])

    def profile(self, base: Profile) -> Profile:
        return parse_profile(self.cleaned_data.get("kafka"), self.cleaned_data.get("client"), base)


class NewSessionForm(ProfileForm):
    scenario = forms.CharField(required=False, max_length=100)
    backend = forms.ChoiceField(required=False, choices=[("sim", "sim"), ("kafka", "kafka")])
    seed = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1)
    listen = forms.BooleanField(required=False)  # "Connect your own app": the new session listens at once


class ActionForm(Form):
    """A button on a producer's or consumer's card: `ACTOR.ACTION`, with the one argument some actions take."""

    actor = NameField()
    action = forms.ChoiceField(
        choices=[(a, a) for a in sorted(set(PRODUCER_ACTIONS + CONSUMER_ACTIONS)) if a != "produce"]
    )
    consumer = NameField(required=False)
    max = forms.IntegerField(required=False, min_value=1, max_value=1_000_000)

    def step(self) -> Step:
        d = self.cleaned_data
        args: dict[str, Any] = {}
        if d["action"] == "send_offsets_to_transaction":
            if not d.get("consumer"):
                raise forms.ValidationError(_("consumer: whose offsets? Name a consumer."))
            args["consumer"] = d["consumer"]
        if d["action"] == "poll" and d.get("max"):
            args["max"] = d["max"]
        return Step(actor=d["actor"], action=d["action"], args=args)


class ProduceForm(Form):
    actor = NameField()
    topic = forms.CharField(max_length=249)
    partition = forms.IntegerField(required=False, min_value=0, max_value=10_000)
    key = forms.CharField(required=False, max_length=4096, strip=False)
    value = forms.CharField(required=False, max_length=65536, strip=False)
    await_ = BoolField(default=True)
    from_ = NameField(required=False)

    def __init__(self, data: Any = None, **kwargs: Any) -> None:
        # `await` and `from` are Python keywords: the fields carry a trailing underscore, the form names do not.
        if data is not None:
            data = data.copy()
            for name in ("await", "from"):
                if name in data:
                    data[f"{name}_"] = data[name]
        super().__init__(data, **kwargs)

    def clean(self) -> dict[str, Any]:
        d = super().clean()
        if self.errors:
            return d
        if d.get("from_"):
            if d.get("value") or d.get("key") or d.get("partition") is not None:
                raise forms.ValidationError(
                    _("from: the records keep the consumed key, value and partition; leave those empty")
                )
        elif not d.get("value"):
            self.add_error("value", _("a record needs a value"))
        try:
            limits.check_value(d.get("value") or None, "value")
            limits.check_value(d.get("key") or None, "key")
        except limits.LimitExceeded as exc:
            raise forms.ValidationError(str(exc)) from None
        for name in ("value", "key"):
            if "\x00" in (d.get(name) or ""):
                self.add_error(name, _("no NUL characters"))
        return d

    def step(self) -> Step:
        d = self.cleaned_data
        args: dict[str, Any] = {"topic": d["topic"]}
        if d.get("from_"):
            args["from"] = d["from_"]
        else:
            if d.get("partition") is not None:
                args["partition"] = d["partition"]
            if d.get("key"):
                args["key"] = d["key"]
            args["value"] = d["value"]
        if not d["await_"]:
            args["await"] = False
        return Step(actor=d["actor"], action="produce", args=args)


class ClockForm(Form):
    seconds = forms.IntegerField(min_value=1, max_value=limits.DEFAULTS["clock_advance_s"])

    def step(self) -> Step:
        return Step(actor="clock", action="advance", args={"ms": self.cleaned_data["seconds"] * 1000})


class BrokerForm(Form):
    broker = forms.IntegerField(min_value=1, max_value=99)
    action = forms.ChoiceField(choices=[("stop", "stop"), ("start", "start")])

    def step(self) -> Step:
        return Step(actor="broker", action=self.cleaned_data["action"], args={"broker": self.cleaned_data["broker"]})


class AddProducerForm(Form):
    mode = forms.ChoiceField(choices=[("share", "share"), ("new", "new"), ("plain", "plain")])
    transactional_id = NameField(required=False)

    def clean(self) -> dict[str, Any]:
        d = super().clean()
        if d.get("mode") == "share" and not d.get("transactional_id"):
            self.add_error("transactional_id", _("name the transactional id to share"))
        return d


class AddConsumerForm(Form):
    isolation = forms.ChoiceField(
        choices=[("read_committed", "read_committed"), ("read_uncommitted", "read_uncommitted")]
    )
    group = NameField(required=False)


ISOLATION_LABELS = {
    "read_committed": gettext_lazy("read_committed"),
    "read_uncommitted": gettext_lazy("read_uncommitted"),
}


class ScenarioTextForm(Form):
    """The editor's text. The loader names what is wrong with it (with lines); the form only bounds the request:
    a text over the loader's limit still reaches it, to get the line-numbered message."""

    text = forms.CharField(max_length=4 * 64 * 1024, strip=False)
    backend = forms.ChoiceField(required=False, choices=[("sim", "sim"), ("kafka", "kafka")])


class ForkForm(Form):
    at = forms.IntegerField(min_value=0, max_value=10_000_000)
    backend = forms.ChoiceField(required=False, choices=[("sim", "sim"), ("kafka", "kafka")])


class CellForm(Form):
    """A database cell's address on the page: its table ("" for the reconciliation's rows), row and column."""

    table = forms.CharField(required=False, max_length=64)
    row = forms.IntegerField(min_value=0, max_value=100_000)
    col = forms.IntegerField(min_value=0, max_value=1000)


OFFSET_MAX = 2**63 - 1  # Kafka's offsets are int64


class WindowForm(Form):
    """Where a list page starts: ?from= (an offset, or a row of a list), ?to= (the last offset of a partition's
    page), ?before= (the RPC the timeline stops before), ?pinned=1 (the timeline's pinned RPCs only); and log.json's
    ?limit= (commands on a page)."""

    start = forms.IntegerField(required=False, min_value=0, max_value=OFFSET_MAX)
    to = forms.IntegerField(required=False, min_value=-1, max_value=OFFSET_MAX)
    before = forms.IntegerField(required=False, min_value=0, max_value=OFFSET_MAX)
    limit = forms.IntegerField(required=False, min_value=1, max_value=LOG_PAGE_MAX)
    pinned = forms.BooleanField(required=False)

    def __init__(self, data: Any) -> None:
        # "from" is a Python keyword: the field is `start`, the query parameter `from`
        fields = {k: data.get(k) for k in ("to", "before", "limit", "pinned") if data.get(k) not in (None, "")}
        if data.get("from") not in (None, ""):
            fields["start"] = data.get("from")
        super().__init__(fields)

    def message(self) -> str:
        return _errors(self, {"start": "from"})


class ClaimForm(Form):
    key = forms.CharField(max_length=128)


class RunForm(Form):
    """ "run": optionally its speed, the milliseconds between two steps (the page's speed control)."""

    ms = forms.IntegerField(required=False, min_value=RUN_STEP_MS_MIN, max_value=RUN_STEP_MS_MAX)


class PredictForm(Form):
    """An answer to a step's question: the step's index and the choice's (-1: skipped)."""

    n = forms.IntegerField(min_value=0, max_value=10_000)
    choice = forms.IntegerField(min_value=-1, max_value=20)


class PipelineForm(Form):
    """Judge the session as a consume-transform-produce pipeline: one more stage (its topics are checked against the
    session's by the command), or none at all (`clear`)."""

    source = forms.CharField(max_length=249, required=False)  # Kafka's longest topic name
    sink = forms.CharField(max_length=249, required=False)
    by = forms.ChoiceField(choices=[(b, b) for b in PIPELINE_BY], required=False)
    header = forms.CharField(max_length=HEADER_NAME_CHARS, required=False)  # by: header's header name
    clear = forms.BooleanField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("clear") and not (data.get("source") and data.get("sink")):
            raise forms.ValidationError(_("Name the topic the pipeline reads and the topic it writes."))
        if not data.get("clear") and data.get("by") == "header" and not data.get("header"):
            raise forms.ValidationError(_("Name the header an output carries its input's key in."))
        return data

    def stage(self) -> dict[str, str] | None:
        d = self.cleaned_data
        if d.get("clear"):
            return None
        out = {"from": d["source"], "to": d["sink"], "by": d.get("by") or "key"}
        if out["by"] == "header":
            out["header"] = d["header"]
        return out


class JoinForm(Form):
    code = forms.CharField(max_length=12)
    name = forms.CharField(max_length=80)


class NewWorkshopForm(Form):
    title = forms.CharField(max_length=100)


class MoveForm(Form):
    item = forms.IntegerField(min_value=0, max_value=1000)


class RevealForm(Form):
    n = forms.IntegerField(min_value=0, max_value=10_000)  # the question's scenario step
