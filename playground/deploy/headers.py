"""Headers every answer carries, in every mode: the Content-Security-Policy.

The pages run only the scripts this server serves (htmx, its ws extension, CodeMirror, the project's own few files:
all vendored, none inline, no eval), so a script that got into a page through some escaping mistake does not run.
Styles come from the stylesheet, and from `<style>` elements that carry the response's nonce (CodeMirror's, given
the nonce by editor.js from the page's csp-nonce meta tag); `style` attributes stay allowed (the timeline and the
board size their drawings with them). htmx's own indicator styles are switched off (base.html). Connections
(fetch, the websockets) go to this server only; `frame-ancestors 'self'` lets the board frame a session, and no one
else. settings.PLAYGROUND_CONTENT_SECURITY_POLICY replaces the policy ("" sends none).
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'nonce-{nonce}'",
        "style-src-attr 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "frame-src 'self'",
        "frame-ancestors 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    )
)


def policy() -> str:
    value = getattr(settings, "PLAYGROUND_CONTENT_SECURITY_POLICY", None)
    return CONTENT_SECURITY_POLICY if value is None else str(value)


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Sync and async alike (MiddlewareMixin), so that Django never hops threads around it (settings.py's
    middleware are all async-capable: see playground/deploy/staticfiles.py). Each request gets a fresh nonce
    (request.csp_nonce, for the templates)."""

    def process_request(self, request: HttpRequest) -> None:
        request.csp_nonce = secrets.token_urlsafe(16)

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        value = policy()
        if value and "Content-Security-Policy" not in response:
            nonce = getattr(request, "csp_nonce", "") or secrets.token_urlsafe(16)
            response["Content-Security-Policy"] = value.replace("{nonce}", nonce)
        return response
