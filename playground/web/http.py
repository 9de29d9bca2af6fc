"""What every view shares: the client's key for the per-client limits, a problem answered as a sentence, bad
input turned into a 4xx, a request refused before its view (badinput.py) answered in the view's own way, and the
site's handler400."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.loader import render_to_string

from playground import session
from playground.deploy.clientaddr import client_address
from playground.session import limits
from playground.web import forms


def client(request: HttpRequest) -> str:
    """A keyed hash of the client's address (the per-client limits), never the address itself. Behind a reverse
    proxy named in PLAYGROUND_TRUSTED_PROXIES, the address it forwarded (clientaddr.py); else the peer's."""
    return session.client_key(client_address(request))


def problem(message: str, status: int = 400) -> HttpResponse:
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


@dataclass(frozen=True)
class Refusal:
    """What is wrong with a request refused before its view (badinput.py): the field, parameter, header or cookie
    it is in ("" for the address itself), and the sentence."""

    field: str
    message: str

    @property
    def said(self) -> str:
        """As the forms say a bad field (forms._errors): "field: message"."""
        return forms.field_said(self.field, self.message) if self.field else self.message


RefusalAnswer = Callable[[HttpRequest, Refusal], HttpResponse]


def refuses_with(answer: RefusalAnswer) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The view's requests refused before it (a NUL, a charset: badinput.py) are answered by `answer` (its JSON, its
    page with the form again) instead of a plain sentence. Put it under the view's other decorators or over them:
    functools.wraps carries the mark."""

    def mark(view: Callable[..., Any]) -> Callable[..., Any]:
        view.refusal_answer = answer  # type: ignore[attr-defined]
        return view

    return mark


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400 (urls.py): templates/400.html in the visitor's language, nothing of the exception shown, without
    the CSRF check Django's view runs first (requires_csrf_token, for a 400.html with a form; this one has none).
    That check reads the body, and a body Django refused to read (a form in another charset than UTF-8: BadRequest)
    was refused again inside the error view: a 500."""
    return HttpResponseBadRequest(render_to_string("400.html"))


def answers_problems(view: Callable[..., Any]) -> Callable[..., HttpResponse]:
    """Bad input and limits become a 4xx with the sentence (429 for a count over time: wait and try again)."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except session.CommandError as exc:
            return problem(str(exc), exc.status)
        except limits.LimitExceeded as exc:
            return problem(str(exc), exc.status)
        except forms.forms.ValidationError as exc:
            return problem("; ".join(exc.messages))

    return wrapper


def valid(form: forms.Form) -> forms.Form:
    if not form.is_valid():
        raise session.CommandError(form.message())
    return form
