"""The inspector's findings in the language of the page being rendered: their sentences (playground/inspector/
sentences.py's [id, {values}], through the catalogue) and how sure each is."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop as N_

from playground.inspector import sentences

register = template.Library()

CONFIDENCE_WORDS = {"certain": N_("certain"), "likely": N_("likely"), "possible": N_("possible")}


@register.filter
def said(value: Any) -> str:
    """A sentence the inspector wrote as [id, {values}] (a value may be one too), through the catalogue; any other
    value as it is."""
    if not sentences.is_said(value):
        return "" if value is None else str(value)
    key, values = value
    return _(sentences.msgid(key)) % {k: said(v) for k, v in values.items()}


@register.filter
def confidence_word(confidence: Any) -> str:
    """How sure the inspector is (certain, likely, possible), in the viewer's language."""
    text = "" if confidence is None else str(confidence)
    return _(CONFIDENCE_WORDS[text]) if text in CONFIDENCE_WORDS else text
