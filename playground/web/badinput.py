"""Requests no view is given: a NUL character anywhere (the address, a parameter of it, a form field, a header, a
cookie), or a body in a charset other than UTF-8. Each is answered 400 with a sentence naming what is wrong, in the
visitor's language, before the CSRF check reads the body and before any view, so before the database.

Why once, here, rather than in each view:
- PostgreSQL's text cannot hold NUL ("A string literal cannot contain NUL (0x00) characters"; psycopg refuses it
  before sending), so any id or value with one that reached a query failed there, a 500 (SQLite takes it). No id,
  name or value of this site has one; RFC 9110 (5.5) makes a NUL in a header field invalid.
- Django reads application/x-www-form-urlencoded in UTF-8 only (its charset is not a parameter of that type: the
  HTML standard's "application/x-www-form-urlencoded serializer") and raises BadRequest for any other charset it
  knows; the CSRF check met that, and then Django's 400 view met it again (it runs the CSRF check again,
  requires_csrf_token): a 500. An unknown charset Django ignores; here it is refused as well, so that what the body
  means never depends on a name the server does not know. A name of UTF-8 itself ("utf8", "UTF-8") is read as
  UTF-8. http.bad_request, the site's handler400, no longer reads the body at all.

BadInputMiddleware is the last of settings.MIDDLEWARE: the visitor's language is known (LocaleMiddleware), the CSRF
cookie is read (a page answered here carries a token that matches it), every other middleware's headers go on its
answer, and the CSRF check has not read the body yet (process_view runs after every middleware's __call__). A view
whose refusals look different says so with http.refuses_with (the editor's check answers JSON, the editor and the
join page show their form again with the sentence); the rest get http.problem's plain sentence, as their other 400s.

RefuseNulWebsockets does the same for the websocket routes (asgi.py): a handshake with a NUL in its address, its
parameters or a header is closed with 4400 before accepting (Daphne answers such a handshake 403), as the
inspector's socket refuses a malformed selection, before any consumer reads an id.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote_to_bytes

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponse, QueryDict
from django.urls import Resolver404, resolve
from django.utils.translation import gettext as _

from playground.web.http import Refusal, problem

NUL = "\x00"
FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
SHOWN_MAX = 40  # characters of a name quoted in a sentence
# A form this long or shorter is read on the event loop: reading one costs ~50 us per KB of text (a command's form,
# ~150 bytes: 15 us), less than a hop to a thread below 2-3 KB. A longer one is read in a thread, as the CSRF check
# read it before: the editor's longest text takes 14 ms, a 2.5 MB body (Django's DATA_UPLOAD_MAX_MEMORY_SIZE) ~130.
INLINE_FORM_BYTES = 2048


def shown(name: str) -> str:
    """A name as a sentence quotes it: a NUL written as %00 (as in the address), cut to SHOWN_MAX characters."""
    text = name.replace(NUL, "%00")
    return text if len(text) <= SHOWN_MAX else text[: SHOWN_MAX - 1] + "…"


def _in_path(request: HttpRequest) -> Refusal | None:
    if NUL in request.path:
        return Refusal("", _("The address has a NUL character (%%00) in it: no page here has one.") % {})
    return None


def _in_headers(request: HttpRequest) -> Refusal | None:
    for name, value in request.headers.items():
        if NUL in value:
            return Refusal(shown(name), _("a NUL character is not allowed in a header."))
    for name, value in request.COOKIES.items():  # a quoted cookie's "\000" is a NUL once read
        if NUL in name or NUL in value:
            return Refusal(shown(name), _("a NUL character is not allowed in a cookie."))
    return None


def _in_charset(request: HttpRequest) -> Refusal | None:
    """A form (FORMS) whose Content-Type names a charset other than UTF-8. The form is emptied, so that whatever
    answers the refusal reads nothing. (Another body's charset is nobody's business: no view reads another body.)"""
    if request.content_type not in FORMS:
        return None
    charset = (request.content_params or {}).get("charset")
    if charset is None:
        return None
    try:
        utf8 = codecs.lookup(charset).name == "utf-8"
    except LookupError:
        utf8 = False
    if utf8:
        request.encoding = "utf-8"  # "utf8", "UTF-8": the one spelling Django's form parser takes
        return None
    request.POST = QueryDict()
    return Refusal(
        "Content-Type",
        _("charset=%(charset)s is not read here: send forms in UTF-8 (charset=utf-8, or no charset).")
        % {"charset": shown(charset)},
    )


def _first_nul(pairs: Iterator[tuple[str, list[str]]]) -> str | None:
    for name, values in pairs:
        if NUL in name or any(NUL in value for value in values):
            return name
    return None


def _in_query(request: HttpRequest) -> Refusal | None:
    name = _first_nul(request.GET.lists())
    if name is None:
        return None
    return Refusal(shown(name), _("a NUL character (%%00) is not allowed in a parameter of the address.") % {})


def _in_form(request: HttpRequest) -> Refusal | None:
    if request.method != "POST" or request.content_type not in FORMS:
        return None
    name = _first_nul(request.POST.lists())
    if name is None:
        return None
    return Refusal(shown(name), _("a NUL character is not allowed in a form field."))


def _cheap(request: HttpRequest) -> bool:
    """Whether checking this request is cheap enough for the event loop: no form to read, or a short one (a body
    whose length is not said, chunked, counts as long)."""
    if request.method != "POST" or request.content_type not in FORMS:
        return True
    try:
        return int(request.META.get("CONTENT_LENGTH") or "") <= INLINE_FORM_BYTES
    except ValueError:
        return False


def refusal_of(request: HttpRequest) -> Refusal | None:
    """What is wrong with this request, if anything; the charset before the form, which is read in it."""
    for check in (_in_path, _in_headers, _in_charset, _in_query, _in_form):
        refusal = check(request)
        if refusal is not None:
            return refusal
    return None


def answer(request: HttpRequest, refusal: Refusal) -> HttpResponse:
    """The refusal as the view that would have answered says it (http.refuses_with), else as a plain sentence."""
    try:
        view = resolve(request.path_info, getattr(request, "urlconf", None)).func
    except Resolver404:
        view = None
    own = getattr(view, "refusal_answer", None)
    if own is not None:
        response: HttpResponse = own(request, refusal)
        return response
    return problem(refusal.said)


class BadInputMiddleware:
    """Refuses a request with a NUL or a charset other than UTF-8 (the module's docstring); sync and async alike,
    its checks on the event loop unless there is a long form to read (INLINE_FORM_BYTES). They only read the
    request: its body is in memory, or a spooled file, by then."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        refusal = refusal_of(request)
        return self.get_response(request) if refusal is None else answer(request, refusal)

    async def __acall__(self, request: HttpRequest) -> Any:
        refusal = refusal_of(request) if _cheap(request) else await sync_to_async(refusal_of)(request)
        if refusal is None:
            return await self.get_response(request)
        # A view's own answer may render a page (templates, the session's settings): in a thread, as a view runs.
        return await sync_to_async(answer)(request, refusal)


def nul_in_scope(scope: dict[str, Any]) -> bool:
    """A NUL in an ASGI scope's address (Daphne hands it decoded), its query string (raw: %00 or the byte) or a
    header's value."""
    if NUL in scope.get("path", ""):
        return True
    if b"\x00" in unquote_to_bytes(scope.get("query_string") or b""):
        return True
    return any(b"\x00" in value for _name, value in scope.get("headers") or ())


class RefuseNulWebsockets:
    """The websocket routes' door (asgi.py): a handshake with a NUL is closed with 4400 before accepting."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket" and nul_in_scope(scope):
            await receive()  # the handshake (websocket.connect), answered:
            await send({"type": "websocket.close", "code": 4400})
            return
        await self.app(scope, receive, send)
