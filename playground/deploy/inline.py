"""Django's middleware, minus a thread hop per method: under ASGI, MiddlewareMixin's async path runs each
process_request and process_response through sync_to_async (a profile of a command in Daphne showed 32
sync_to_async calls per request, most of them these, and as much CPU as the command itself). These only read the
request and set headers (no I/O), so they run on the event loop as they are; the sync path (the test client) is
unchanged. Security, CSRF and X-Frame-Options stay Django's own classes in settings.py (`check --deploy` looks for
them by name): run_djangos_inline() gives those their inline path."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
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


async def _gzip_acall(self: Any, request: Any) -> Any:
    """GZip's async path: to its thread only with something to compress. A response under 200 bytes (a command's
    204, an error's sentence) is one Django's process_response returns as it is, before it touches anything."""
    response = await self.get_response(request)
    if not response.streaming and len(response.content) < 200:
        return response
    return await sync_to_async(self.process_response, thread_sensitive=True)(request, response)


def run_djangos_inline() -> None:
    """Django's Security, CSRF and X-Frame-Options middleware on the event loop too: settings.py names Django's own
    classes (`check --deploy` looks for them by name, and skips every SECURE_* check without SecurityMiddleware), so
    their async path is set here, once, as the ASGI application is built (playground/asgi.py). Each of them only
    reads the request and sets headers: five thread hops a request fewer, ~0.15 ms of CPU each (a CSRF check's
    process_view still hops: Django's handler adapts it). GZip compresses in its thread: zlib releases the GIL there
    and compresses a 40 KB page beside the event loop; a response too short to compress does not go there. Their
    sync path (the test client, `manage.py runserver`) is Django's own."""
    from django.middleware import clickjacking, csrf, gzip, security

    for cls in (security.SecurityMiddleware, csrf.CsrfViewMiddleware, clickjacking.XFrameOptionsMiddleware):
        cls.__acall__ = InlineMixin.__acall__
    gzip.GZipMiddleware.__acall__ = _gzip_acall
