"""Our own stylesheets and scripts as they are served: minified, their comments and the whitespace nobody needs gone
(rcssmin and rjsmin, the minifiers django-compressor uses; neither renames nor reorders anything). static/ keeps the
hand-written files, read as they are written; the server minifies them on the way out, in both modes: `make run`
(development mode, staticfiles.CompressedStaticFilesHandler, on every request) and collectstatic (production mode,
staticfiles.MinifiedManifestStaticFilesStorage, before the files are hashed and compressed). The vendored files
(static/vendor/: htmx, its ws extension, CodeMirror) are served as their makers shipped them."""

from __future__ import annotations

import rcssmin
import rjsmin


def ours(name: str) -> bool:
    """A static file's name (css/playground.css, its path under /static/): one of our stylesheets or scripts."""
    name = name.replace("\\", "/").lstrip("/")
    return name.endswith((".css", ".js")) and not name.startswith("vendor/")


def minify(name: str, content: bytes) -> bytes:
    """The file as it is served: minified if it is ours (ours(name)), else as it is."""
    if not ours(name):
        return content
    text = content.decode("utf-8")
    small = rcssmin.cssmin(text) if name.endswith(".css") else rjsmin.jsmin(text)
    return small.encode("utf-8")
