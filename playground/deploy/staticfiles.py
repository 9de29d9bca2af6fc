"""WhiteNoise as a middleware Django can keep on the event loop (production mode serves /static/ through it), the
storage collectstatic writes production mode's files with, and development mode's /static/ handler; both of the last
two serve our own CSS and JS minified (minify.py).

WhiteNoiseMiddleware is sync-only. In the ASGI handler's chain of async middleware Django adapts around it: every
request (not only static ones) went into a thread to pass WhiteNoise, back to the event loop for the middleware
after it, and into a thread again for the view. Each hop waits for the event loop; under a 40-attendee workshop
those waits were a good part of a command's time (tools/bench/workshop.py). Finding a file is a dict lookup
(autorefresh is off outside DEBUG); serving one opens the file, which happens in a thread.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.files.base import ContentFile
from django.http import HttpResponse
from django.middleware.gzip import GZipMiddleware
from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage

from playground.deploy import minify


class AsyncWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response=None, *args, **kwargs):
        super().__init__(get_response, *args, **kwargs)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        return super().__call__(request)

    async def __acall__(self, request):
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            return await sync_to_async(self.serve, thread_sensitive=False)(static_file, request)
        return await self.get_response(request)


class MinifiedManifestStaticFilesStorage(CompressedManifestStaticFilesStorage):
    """WhiteNoise's storage (hashed names, .gz files, far-future caching), our own CSS and JS minified first: each is
    written minified under its own name over the copy collectstatic made, and hashed and compressed from there (the
    manifest storage reads each file's original from where it was found: ours are read from the minified copy)."""

    def post_process(self, paths, dry_run=False, **options):
        if not dry_run:
            paths = dict(paths)
            for name, (storage, path) in list(paths.items()):
                if minify.ours(name):
                    with storage.open(path) as original:
                        small = minify.minify(name, original.read())
                    self.delete(name)
                    self._save(name, ContentFile(small))
                    paths[name] = (self, name)
        yield from super().post_process(paths, dry_run=dry_run, **options)


class CompressedStaticFilesHandler(ASGIStaticFilesHandler):
    """Development mode's /static/ (Django's own handler, `make run`): our own CSS and JS minified from the files in
    static/ on every request (they are edited while the server runs), gzip-compressed for a browser that accepts it,
    as WhiteNoise's .gz files are in production mode: a session's first page carried its stylesheet and scripts
    (125 KB) as they are on disk."""

    async def get_response_async(self, request):
        response = await super().get_response_async(request)
        if response.streaming:
            # A file is served streaming, in 64 KB blocks; compressing that stream cut the vendored editor
            # (434 KB) after its first block. Read whole (a development server's files are small), then compressed.
            body = b"".join([part async for part in response.streaming_content])
            plain = HttpResponse(body, status=response.status_code)
            for header, value in response.items():
                plain[header] = value
            response.close()
            response = plain
        name = self.file_path(request.path)
        if response.status_code == 200 and minify.ours(name):
            response.content = minify.minify(name, response.content)
            response["Content-Length"] = str(len(response.content))
        return GZipMiddleware(lambda _request: response).process_response(request, response)
