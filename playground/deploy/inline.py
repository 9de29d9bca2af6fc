"""Django's middleware, minus a thread hop per method: under ASGI, MiddlewareMixin's async path runs each
process_request and process_response through sync_to_async (a profile of a command in Daphne showed 32
sync_to_async calls per request, most of them these, and as much CPU as the command itself). These only read the
request and set headers (no I/O), so they run on the event loop as they are; the sync path (the test client) is
unchanged. Security, CSRF and X-Frame-Options stay Django's own classes in settings.py (`check --deploy` looks for
them by name): run_djangos_inline() gives those their inline path."""

from __future__ import annotations

from typing import Any

from django.middleware import common, locale

from playground.deploy import headers


class InlineMixin:
    """For a MiddlewareMixin subclass whose process_request/process_response neither block nor wait."""

    async def __acall__(self, request: Any) -> Any:
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)  # type: ignore[attr-defined]
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class ContentSecurityPolicyMiddleware(InlineMixin, headers.ContentSecurityPolicyMiddleware):
    pass


class LocaleMiddleware(InlineMixin, locale.LocaleMiddleware):
    pass


class CommonMiddleware(InlineMixin, common.CommonMiddleware):
    pass


def run_djangos_inline() -> None:
    """Django's Security, CSRF and X-Frame-Options middleware on the event loop too: settings.py names Django's own
    classes (`check --deploy` looks for them by name, and skips every SECURE_* check without SecurityMiddleware), so
    their async path is set here, once, as the ASGI application is built (playground/asgi.py). Each of them only
    reads the request and sets headers: five thread hops a request fewer, ~0.15 ms of CPU each (a CSRF check's
    process_view still hops: Django's handler adapts it). GZip stays in its thread: compressing a 40 KB page there
    lets zlib, which releases the GIL, run beside the event loop. Their sync path (the test client, `manage.py
    runserver`) is Django's own."""
    from django.middleware import clickjacking, csrf, security

    for cls in (security.SecurityMiddleware, csrf.CsrfViewMiddleware, clickjacking.XFrameOptionsMiddleware):
        cls.__acall__ = InlineMixin.__acall__
