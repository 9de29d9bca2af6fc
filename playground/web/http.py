"""What every view shares: the client's key for the per-client limits, a problem answered as a sentence, and bad
input turned into a 4xx."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

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
