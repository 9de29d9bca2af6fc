"""A tiny HTTP client with cookies and Django's CSRF token, to drive a running server like a browser would."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Browserish:
    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.base = base
        self.headers = dict(headers or {})  # sent with every request (X-Forwarded-For behind a trusted proxy...)
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with self.opener.open(urllib.request.Request(self.base + path, headers=self.headers), timeout=20) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def csrf(self) -> str:
        for c in self.jar:
            if c.name == "csrftoken":
                return c.value
        self.get("/")
        return next(c.value for c in self.jar if c.name == "csrftoken")

    def post(self, path: str, data: dict | None = None, headers: dict[str, str] | None = None) -> tuple[int, str, dict]:
        body = urllib.parse.urlencode(data or {}).encode()
        req = urllib.request.Request(
            self.base + path,
            data=body,
            method="POST",
            headers={
                **self.headers,
                "X-CSRFToken": self.csrf(),
                "Origin": self.base,
                "Referer": self.base + "/",
                **(headers or {}),
            },
        )
        try:
            with self.opener.open(req, timeout=20) as r:
                return r.status, r.read().decode(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace"), dict(e.headers)

    def cookie(self, name: str) -> str | None:
        return next((c.value for c in self.jar if c.name == name), None)

    def new_session(self, scenario: str = "") -> str:
        status, body, headers = self.post("/new/", {"scenario": scenario})
        assert status == 302, (status, body)
        m = re.search(r"/s/([^/]+)/", headers["Location"])
        return m.group(1)
