"""The loader's messages, in English and translatable without Django here (this package stays Django-free: the
management command, the simulator's tests and the web layer import it).

`_("unknown %(what)s %(name)s") % {...}` is the English text (a `str`: the CLI, `str(ScenarioError)`, the format
contract and the tests read it as before) that also remembers its message id and parameters; the web layer
translates it for the page's language with `text.translate(gettext)` (playground/web/views.py). The message ids
are gettext's: makemessages and tests/web/test_i18n.py find them as `_("...")` calls, and the zh catalogue
(locale/zh_Hans/LC_MESSAGES/django.po) holds their translations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any


class Text(str):
    """English text that knows how it was made: a message id and its parameters (themselves Texts or plain)."""

    msgid: str
    params: Mapping[str, Any] | None

    def __new__(cls, msgid: str, params: Mapping[str, Any] | None = None) -> Text:
        text = super().__new__(cls, msgid % params if params is not None else msgid)
        text.msgid, text.params = msgid, params
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (Text, (self.msgid, self.params))  # pickled as made: the English text is formatted again

    def __mod__(self, params: Any) -> Text:
        return Text(self.msgid, params)

    def __add__(self, other: str) -> Text:
        return Joined("", (self, other))

    def __radd__(self, other: str) -> Text:
        return Joined("", (other, self))

    def join(self, items: Iterable[str]) -> Text:
        return Joined(self, tuple(items))

    def translate(self, gettext: Callable[[str], str]) -> str:  # type: ignore[override]
        """This text in the language `gettext` translates to (an id without a translation stays English)."""
        if self.params is None:
            return gettext(self.msgid)
        return gettext(self.msgid) % {k: translated(v, gettext) for k, v in self.params.items()}


class Joined(Text):
    """Texts (or plain strings) joined by a separator, itself a Text or plain: translated part by part."""

    separator: str
    parts: tuple[str, ...]

    def __new__(cls, separator: str, parts: tuple[str, ...]) -> Joined:
        text = str.__new__(cls, str(separator).join(str(p) for p in parts))
        text.msgid, text.params = str(text), None
        text.separator, text.parts = separator, parts
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (Joined, (self.separator, self.parts))

    def translate(self, gettext: Callable[[str], str]) -> str:  # type: ignore[override]
        return str(translated(self.separator, gettext)).join(str(translated(p, gettext)) for p in self.parts)


def translated(text: Any, gettext: Callable[[str], str]) -> Any:
    """`text` in gettext's language when it is a Text; anything else as it is."""
    return text.translate(gettext) if isinstance(text, Text) else text


def _(msgid: str) -> Text:
    """Marks a message for translation (gettext's name, so that makemessages and the i18n test find it)."""
    return Text(msgid)
