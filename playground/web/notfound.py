"""A wrong link under DEBUG (`make run` on a laptop, a workshop's room included) shows the site's own 404 page
(templates/404.html, in the visitor's language), as production does, not Django's debug page listing every URL
pattern. With DEBUG on, Django answers any Http404 with its technical page (django.core.handlers.exception.
response_for_exception) and never calls handler404; so this middleware answers first: an address no URL pattern
matches before any view, and a Http404 a view raised as process_exception. With DEBUG off it steps aside: Django's
own handler404 renders the same template."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import Resolver404, resolve
from django.views import defaults


class OwnNotFoundMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self.__acall__(request)
        return self._unmatched(request) or self.get_response(request)

    async def __acall__(self, request: HttpRequest) -> HttpResponse:
        get_response: Callable[[HttpRequest], Awaitable[HttpResponse]] = self.get_response
        return self._unmatched(request) or await get_response(request)

    def _unmatched(self, request: HttpRequest) -> HttpResponse | None:
        if not settings.DEBUG:
            return None
        try:
            resolve(request.path_info)
        except Resolver404 as exc:
            return defaults.page_not_found(request, exc)
        return None

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if settings.DEBUG and isinstance(exception, Http404):
            return defaults.page_not_found(request, exception)
        return None
