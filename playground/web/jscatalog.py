"""The scripts' own words in the page's language: Django's JavaScriptCatalog of the djangojs domain
(locale/<lang>/LC_MESSAGES/djangojs.po), served as /jsi18n/<lang>.js, a script of this server's own (the
Content-Security-Policy's script-src 'self': nothing inline, no eval). Every page loads it before static/js, which
calls gettext, ngettext and interpolate as Django's catalogue names them (makemessages -d djangojs reads those
calls). The address carries the catalogues' version (?v=, a digest of the compiled .mo files), so that a browser keeps
the script until they change; it is rendered once per language and process, without Django's date and number
formats (the scripts use none), a kilobyte with its catalogue."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.i18n import JavaScriptCatalog

DOMAIN = "djangojs"


@functools.cache
def version() -> str:
    digest = hashlib.sha256()
    for path in sorted(
        Path(p) for base in settings.LOCALE_PATHS for p in Path(base).glob(f"*/LC_MESSAGES/{DOMAIN}.mo")
    ):
        digest.update(path.parent.parent.name.encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def url(lang: str) -> str:
    return f"{reverse('jsi18n', args=[lang])}?v={version()}"


class _Catalogue(JavaScriptCatalog):
    domain = DOMAIN

    def render_to_response(self, context: dict, **response_kwargs: object) -> HttpResponse:
        text = render_to_string(
            "playground/jsi18n.js",
            {
                "catalog": json.dumps(context["catalog"], ensure_ascii=False, sort_keys=True),
                "plural": context["plural"],
            },
        )
        return HttpResponse(text, content_type="text/javascript; charset=utf-8")


@functools.cache
def _script(lang: str) -> bytes:
    with translation.override(lang):
        return _Catalogue().get(HttpRequest()).content


def catalogue(request: HttpRequest, lang: str) -> HttpResponse:
    if lang not in dict(settings.LANGUAGES):
        raise Http404(_("No such language."))
    response = HttpResponse(_script(lang), content_type="text/javascript; charset=utf-8")
    fresh = request.GET.get("v") == version()
    response["Cache-Control"] = "public, max-age=31536000, immutable" if fresh else "no-cache"
    return response
