"""Languages: Django's codes (en, zh-hans) against the scenario files' ({en: ..., zh: ...})."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings

LANGS = [code for code, _name in settings.LANGUAGES]


def scenario_lang(django_lang: str | None) -> str:
    """The key a scenario file uses for a Django language code: zh-hans -> zh, en -> en."""
    lang = (django_lang or "en").lower()
    return "zh" if lang.startswith("zh") else "en"


def pick(text: Any, django_lang: str | None) -> str:
    """The text for a language from a {lang: text} dict (or a plain string), falling back to English."""
    if text is None:
        return ""
    if isinstance(text, str):
        return text
    if isinstance(text, Mapping):
        lang = scenario_lang(django_lang)
        for key in (lang, django_lang, "en"):
            if key and text.get(key):
                return str(text[key])
        for value in text.values():
            if value:
                return str(value)
        return ""  # every language empty: nothing to show (never the dict's repr)
    return str(text)


def normalize(django_lang: str | None) -> str:
    default: str = settings.LANGUAGE_CODE
    lang = (django_lang or default).lower()
    if lang in LANGS:
        return lang
    if lang.startswith("zh"):
        return "zh-hans"
    return default
