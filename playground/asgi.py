"""ASGI entry point for Daphne: HTTP through Django (static files included, so `daphne` alone serves the whole
dashboard), websockets through Channels."""

import gc
import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings")

from playground.deploy import inline, memory

memory.return_large_blocks()  # what a burst of large requests or checkpoints takes, the process gives back

inline.run_djangos_inline()  # before the handler builds its middleware chain
django_asgi_app = get_asgi_application()

from channels.layers import get_channel_layer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from playground.deploy.staticfiles import CompressedStaticFilesHandler  # noqa: E402
from playground.routing import websocket_urlpatterns  # noqa: E402
from playground.web import warmup  # noqa: E402
from playground.web.badinput import RefuseNulWebsockets  # noqa: E402
from playground.web.slots import RequestSlots, WebsocketSlots  # noqa: E402

if settings.KAFKA_BOOTSTRAP_SERVERS or settings.KAFKA4_BOOTSTRAP_SERVERS:
    # Topics a killed server process left on the cluster: deleted once its owner is known dead (never a live
    # process's); in a thread, so that the server does not wait for the cluster to start.
    from playground.kafka.java_worker import build_in_background
    from playground.kafka.owners import sweep_at_startup

    sweep_at_startup()
    build_in_background()  # the Java client's worker, for Java sessions: the server does not wait for it

# Static files: in production mode WhiteNoise serves them from collectstatic's output (a middleware, see settings.py);
# otherwise Django's handler serves them straight from static/, so that `daphne` alone serves the whole dashboard.
http_application = django_asgi_app if settings.PLAYGROUND_PRODUCTION else CompressedStaticFilesHandler(django_asgi_app)

application = ProtocolTypeRouter(
    {
        # A client's requests carried out at once bounded per process, the next ones waiting their turn (slots.py).
        "http": RequestSlots(http_application),
        # Open websockets bounded per client and per process (playground/web/slots.py), after the origin check and
        # after refusing a NUL in the handshake (playground/web/badinput.py).
        "websocket": AllowedHostsOriginValidator(RefuseNulWebsockets(WebsocketSlots(URLRouter(websocket_urlpatterns)))),
    }
)

# The channel layer, made before the server listens (Daphne imports this module first): made by a process's first
# websocket, importing channels_redis held its event loop for ~0.5 s, and every page of a room joining waited.
get_channel_layer()

# A process's first pages' imports, diagram layouts and templates (~0.5 s), done before it listens: a room's joins
# arrive together at processes that have served nothing yet.
warmup.run()
# What exists now lives as long as the process: out of the collector's sight, a full collection walks only what
# requests and sessions made since (scrubbing a 10,000-command session, one took 218 ms, and 140 ms once frozen).
gc.collect()
gc.freeze()
