"""Django settings. Embedded defaults (SQLite, in-memory channel layer, the simulator) so `make run` works on a
bare machine; DATABASE_URL, REDIS_URL and KAFKA_BOOTSTRAP_SERVERS switch on the real parts. Production mode
(PLAYGROUND_MODE=production, or PLAYGROUND_PUBLIC_URL set; playground/deploy/production.py) is for serving a room: DEBUG off, a
kept secret key, hosts and origins from the public URL, https settings when it is https, static files by WhiteNoise."""

import os
from pathlib import Path
from typing import Any

from playground.deploy import clientaddr, dburl
from playground.deploy import production as deploy

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PLAYGROUND_VAR_DIR", BASE_DIR / "var"))

# Production mode (playground/deploy/production.py): PLAYGROUND_MODE=production, or PLAYGROUND_PUBLIC_URL set (and PLAYGROUND_MODE
# unset). `make run` with a non-loopback HOST and the Docker image turn it on. Everything that differs is below.
PLAYGROUND_PRODUCTION = deploy.production_mode()
PLAYGROUND_PUBLIC = None  # production mode: the parsed PLAYGROUND_PUBLIC_URL (deploy.PublicURL), if set

if not PLAYGROUND_PRODUCTION:
    # `make run` on loopback, the tests: as it has always been.
    SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", deploy.DEV_SECRET_KEY)
    DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
    ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")
else:
    # DEBUG is off whatever DJANGO_DEBUG says; the key is DJANGO_SECRET_KEY or VAR_DIR/secret_key (made on first
    # start, mode 0600), never the development one.
    SECRET_KEY = deploy.secret_key(VAR_DIR)
    DEBUG = False
    _public_url = os.environ.get("PLAYGROUND_PUBLIC_URL", "").strip()
    if _public_url:
        PLAYGROUND_PUBLIC = deploy.parse_public_url(_public_url)
    # The host the room types, the address Daphne is bound to (set by `make run`), localhost, and any extra names
    # from DJANGO_ALLOWED_HOSTS.
    _bind_host = os.environ.get("PLAYGROUND_BIND_HOST", "")
    _port = int(os.environ.get("PLAYGROUND_PORT", "0") or 0) or None
    ALLOWED_HOSTS = deploy.allowed_hosts(PLAYGROUND_PUBLIC, _bind_host, os.environ.get("DJANGO_ALLOWED_HOSTS", ""))
    CSRF_TRUSTED_ORIGINS = deploy.csrf_trusted_origins(PLAYGROUND_PUBLIC, _bind_host, _port)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.contenttypes",
    "django.contrib.staticfiles",
    "channels",
    "playground",
]

# Those of playground.deploy.inline run on the event loop under ASGI instead of a thread hop per method (its docstring
# says why). Security, CSRF and X-Frame-Options keep Django's own names: `check --deploy` looks for those names.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Pages and fragments gzip-compressed for a client that accepts it: a session's page is ~38 KB of HTML that
    # compresses to a fifth (Django's middleware pads each answer at random against BREACH). Static files are not
    # its business: WhiteNoise serves their own .gz in production mode (it sits before this one there).
    "django.middleware.gzip.GZipMiddleware",
    # Every answer, every mode: only this server's own scripts run (playground/deploy/headers.py).
    "playground.deploy.inline.ContentSecurityPolicyMiddleware",
    "playground.deploy.inline.LocaleMiddleware",
    "playground.deploy.inline.CommonMiddleware",
    # DEBUG (`make run`): a wrong link shows the site's own 404 page, not Django's debug one (playground/web/notfound.py).
    "playground.web.notfound.OwnNotFoundMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A NUL anywhere, a form in another charset than UTF-8: 400 naming it, before the CSRF check reads the body and
    # any view the database. Last: every other one's headers are on its answer (playground/web/badinput.py).
    "playground.web.badinput.BadInputMiddleware",
]
if PLAYGROUND_PRODUCTION:
    # WhiteNoise serves /static/ (hashed names from collectstatic, gzip/brotli variants, far-future Cache-Control)
    # right after SecurityMiddleware, in an async-capable wrapper (playground/deploy/staticfiles.py says why);
    # playground/asgi.py then leaves out Django's ASGIStaticFilesHandler. Before both: X-Forwarded-Proto counts
    # only when a trusted proxy sent it (playground/deploy/clientaddr.py).
    MIDDLEWARE = [
        "playground.deploy.clientaddr.TrustedProxyHeadersMiddleware",
        MIDDLEWARE[0],
        "playground.deploy.staticfiles.AsyncWhiteNoiseMiddleware",
        *MIDDLEWARE[1:],
    ]

ROOT_URLCONF = "playground.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
            ],
            # The template tags live in the web layer (playground/web/templatetags), not in the app's own folder.
            "libraries": {
                "playground": "playground.web.templatetags.playground",
                "comparetags": "playground.web.templatetags.comparetags",
                "inspecttags": "playground.web.templatetags.inspecttags",
                "findingtags": "playground.web.templatetags.findingtags",
            },
        },
    }
]
ASGI_APPLICATION = "playground.asgi.application"


def database_settings(url: str) -> dict:
    """The DATABASES entry for a DATABASE_URL value (playground/deploy/dburl.py has the forms): postgres://user:password@
    host:port/name (or postgresql://, or a unix socket) for PostgreSQL through psycopg 3, sqlite:///absolute/path for
    SQLite; "" for SQLite in PLAYGROUND_DB (default ./db.sqlite3), what `make run` has always used. A malformed URL
    raises ImproperlyConfigured naming DATABASE_URL, so the server stops at startup saying why."""
    database: dict[str, Any] = (
        dburl.parse(url)
        if url
        else {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("PLAYGROUND_DB", str(BASE_DIR / "db.sqlite3")),
        }
    )
    if database["ENGINE"] == "django.db.backends.sqlite3":
        # Two Daphne processes may share one SQLite file; wait for the lock instead of failing.
        # WAL: readers never wait for the writer, and a commit costs no fsync (synchronous=NORMAL), which keeps
        # a command's round trip short; the database survives a crash of the server, at worst losing the last
        # commands of a power cut.
        # IMMEDIATE: a transaction takes the write lock when it begins. Django's ASGI handler runs each request's
        # sync code in a thread of its own, so two pages can write at once; a deferred transaction that read first
        # and then writes after another commit gets "database is locked" at once (SQLITE_BUSY_SNAPSHOT: the
        # timeout does not apply), where an immediate one waits its turn.
        database["OPTIONS"] = {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    else:
        # A pool (Django's psycopg pool): a command used to cost 1.4 fresh connections, each a login (scram-sha-256
        # over TCP: tools/bench/workshop.py measured it as a quarter of the servers' CPU). CONN_MAX_AGE stays 0, as
        # Django requires with a pool and its docs ask of ASGI: a connection goes back to the pool at the end of
        # each request and each database_sync_to_async call. Django's ASGI handler runs each request in a thread of
        # its own, which holds its connection until the response (rendering and publishing the update included): at
        # 40 attendees a pool of 8 per process had requests queueing for a connection most of their time
        # (tools/bench/workshop.py: a command's round trip p50 0.9 s with 8, 0.5 s with 32). 20 per process keeps
        # two processes well inside PostgreSQL's default max_connections (100). A page waits at most
        # DATABASE_POOL_TIMEOUT_S for a connection, then gets an error instead of hanging.
        database["CONN_MAX_AGE"] = 0
        database.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1,
            "max_size": int(os.environ.get("DATABASE_POOL_MAX", "20")),
            "timeout": float(os.environ.get("DATABASE_POOL_TIMEOUT_S", "10")),
        }
    return database


DATABASE_URL = os.environ.get("DATABASE_URL", "").strip()
DATABASES = {"default": database_settings(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    # The pub/sub layer: the core RedisChannelLayer ran out of connections at 100 viewers (design.md).
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The real-cluster backend talks only to the cluster named here, never to an address typed into a form.
KAFKA_BOOTSTRAP_SERVERS = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "")
KAFKA_CLIENT_CONFIG = {
    key[len("KAFKA_CLIENT_") :].lower().replace("_", "."): value
    for key, value in os.environ.items()
    if key.startswith("KAFKA_CLIENT_")
}
# How broker.stop/broker.start steps stop and start brokers, e.g. "bash tools/kafka/kafka.sh {action}-node {broker}"
# ({action} = stop|start; split like a shell would, never run through one). Empty: not possible on this server.
KAFKA_BROKER_CONTROL = os.environ.get("KAFKA_BROKER_CONTROL", "")
# Sessions whose profile is Kafka 4.x run on this cluster instead (the two above serve Kafka 3.9; see
# playground/kafka/clusters.py, which also checks that each cluster is the version it stands for).
KAFKA4_BOOTSTRAP_SERVERS = os.environ.get("KAFKA4_BOOTSTRAP_SERVERS", "")
KAFKA4_BROKER_CONTROL = os.environ.get("KAFKA4_BROKER_CONTROL", "")
# Sessions whose profile is Kafka 3.5 run on this one (the incident's release, before KIP-890; issue 20).
KAFKA35_BOOTSTRAP_SERVERS = os.environ.get("KAFKA35_BOOTSTRAP_SERVERS", "")
KAFKA35_BROKER_CONTROL = os.environ.get("KAFKA35_BROKER_CONTROL", "")
# Which server process owns which real-cluster prefixes (playground/kafka/owners.py): a process that starts sweeps
# the topics a dead one left behind, never a live one's.
KAFKA_OWNERS_DIR = Path(os.environ.get("KAFKA_OWNERS_DIR", VAR_DIR / "kafka-owners"))
# clock.advance sleeps for real on a Kafka cluster; one step sleeps at most this many seconds.
KAFKA_MAX_SLEEP_S = float(os.environ.get("KAFKA_MAX_SLEEP_S", "120"))

LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
USE_I18N = True
TIME_ZONE = "UTC"
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# collectstatic's output. The Docker image puts it outside VAR_DIR, which is a volume there (a volume would keep the
# files of the first image and hide a rebuilt image's).
STATIC_ROOT = Path(os.environ.get("PLAYGROUND_STATIC_ROOT", VAR_DIR / "static"))
if PLAYGROUND_PRODUCTION:
    # Hashed names (css/playground.3f2a....css) and their .gz (and .br, when the Brotli package is installed) made by
    # collectstatic, which the Makefile's production path and the Dockerfile run, our own CSS and JS minified first
    # (deploy/minify.py); WhiteNoise serves a hashed name with "max-age=315360000, public, immutable". A template
    # naming a file collectstatic has not seen fails loudly.
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "playground.deploy.staticfiles.MinifiedManifestStaticFilesStorage"},
    }

# Reverse proxies whose X-Forwarded-For (and X-Forwarded-Proto) are believed: comma-separated IP addresses and CIDR
# networks; empty (the default) believes no one. playground/deploy/clientaddr.py: client_address(request_or_scope).
PLAYGROUND_TRUSTED_PROXIES = os.environ.get("PLAYGROUND_TRUSTED_PROXIES", "")
clientaddr.parse_networks(PLAYGROUND_TRUSTED_PROXIES)  # a typo stops the server at startup, naming the variable

if PLAYGROUND_PRODUCTION and PLAYGROUND_PUBLIC and PLAYGROUND_PUBLIC.secure:
    # Served over https (Daphne with a TLS endpoint, or a TLS proxy in front): cookies only over https, plain http
    # redirected to https (but /healthz, for health checks on the plain port), and HSTS.
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = LANGUAGE_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    # A year by default; PLAYGROUND_HSTS_SECONDS=0 turns HSTS off (and `check --deploy` then says so).
    SECURE_HSTS_SECONDS = int(os.environ.get("PLAYGROUND_HSTS_SECONDS", str(365 * 24 * 3600)))
    # includeSubDomains covers the names under the public host only (ws.example.org: *.ws.example.org), never its
    # parent domain.
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = os.environ.get("PLAYGROUND_HSTS_PRELOAD", "") == "1"
    if PLAYGROUND_TRUSTED_PROXIES:
        # Behind a TLS proxy Daphne sees plain http; the proxy says https in X-Forwarded-Proto. Believed only from
        # the trusted proxies: TrustedProxyHeadersMiddleware drops it from anyone else.
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SILENCED_SYSTEM_CHECKS = (
        []
        if SECURE_HSTS_PRELOAD
        else [
            # security.W021 (no HSTS "preload"): preloading puts the whole registered domain and all its subdomains on
            # the browsers' built-in https-only list, a decision for the domain's owner (hstspreload.org), not for an
            # app on one of its hosts. PLAYGROUND_HSTS_PRELOAD=1 opts in (and then nothing is silenced).
            "security.W021",
        ]
    )
elif PLAYGROUND_PRODUCTION:
    # Plain http on a LAN (a workshop room, a laptop on 0.0.0.0): there is no https to redirect to, to pin or to
    # keep cookies on. These checks cannot apply, and only these are silenced; every other `check --deploy` check
    # (DEBUG, SECRET_KEY, ALLOWED_HOSTS, ...) stays on. Serve with an https PLAYGROUND_PUBLIC_URL and they return.
    SILENCED_SYSTEM_CHECKS = [
        # security.W004 (SECURE_HSTS_SECONDS unset): browsers ignore Strict-Transport-Security received over plain
        # http (RFC 6797, 8.1), so the header would do nothing.
        "security.W004",
        # security.W008 (SECURE_SSL_REDIRECT off): nothing listens for https; redirecting would make the site
        # unreachable.
        "security.W008",
        # security.W016 (CSRF_COOKIE_SECURE off): a Secure cookie is never sent back over http, so every form
        # (new session, commands) would fail its CSRF check.
        "security.W016",
    ]

SCENARIO_DIR = BASE_DIR / "scenarios"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("PLAYGROUND_LOG_LEVEL", "WARNING")},
}

# The dashboard (playground/session.py, limits.py): pause between steps of "run", live backends kept per process,
# per-session and per-client limits (see playground/session/limits.py for the names and defaults).
PLAYGROUND_RUN_STEP_MS = int(os.environ.get("PLAYGROUND_RUN_STEP_MS", "800"))
PLAYGROUND_LIVE_SESSIONS = int(os.environ.get("PLAYGROUND_LIVE_SESSIONS", "200"))
# Simulator checkpoints (every 100 commands of a session, so that going back or scrubbing replays at most 99):
# memory for all sessions of a process, in MiB; the least recently used sessions lose theirs first.
PLAYGROUND_CHECKPOINT_MB = float(os.environ.get("PLAYGROUND_CHECKPOINT_MB", "256"))
# Every bound of playground/session/limits.py (README.md, "Limits"), e.g. PLAYGROUND_LIMITS="sessions_per_minute=20"
PLAYGROUND_LIMITS: dict[str, int] = {
    name.strip(): int(value)
    for name, _sep, value in (item.partition("=") for item in os.environ.get("PLAYGROUND_LIMITS", "").split(","))
    if name.strip() and value.strip()
}
PLAYGROUND_DEFAULT_BACKEND = os.environ.get("PLAYGROUND_DEFAULT_BACKEND", "sim")
# More backends by name, "module:Class" (the web tests register their fake this way in server processes).
PLAYGROUND_BACKENDS = dict(
    item.split("=", 1) for item in os.environ.get("PLAYGROUND_BACKENDS", "").split(",") if "=" in item
)

# Connect your own app (issue 16, playground/session/listener.py): a session's simulated brokers served over the Kafka
# protocol, one port per broker, bound to PLAYGROUND_LISTEN_HOST only (and advertised as it, or as
# PLAYGROUND_LISTEN_ADVERTISED_HOST when clients reach this machine by another name), on free ports or on
# PLAYGROUND_LISTEN_PORTS ("40000-40099"). Off in production mode unless PLAYGROUND_LISTEN=1 (on otherwise unless 0).
_listen = os.environ.get("PLAYGROUND_LISTEN", "").strip().lower()
PLAYGROUND_LISTEN = (_listen in ("1", "true", "yes", "on")) if _listen else not PLAYGROUND_PRODUCTION
PLAYGROUND_LISTEN_HOST = os.environ.get("PLAYGROUND_LISTEN_HOST", "127.0.0.1").strip() or "127.0.0.1"
PLAYGROUND_LISTEN_ADVERTISED_HOST = os.environ.get("PLAYGROUND_LISTEN_ADVERTISED_HOST", "").strip()
PLAYGROUND_LISTEN_PORTS = os.environ.get("PLAYGROUND_LISTEN_PORTS", "").strip()

# Watch your own cluster (/inspect/, playground/inspector): a read-only view of the cluster named above
# (KAFKA_BOOTSTRAP_SERVERS), never of an address from a form. INSPECTOR_KEY is the capability that opens it (asked
# once, then kept in an HttpOnly cookie); unset, the inspector is off. The allow-lists are comma-separated fnmatch
# patterns (`orders,payments-*`); a topic or transactional id they do not match is never read nor shown.
INSPECTOR_KEY = os.environ.get("INSPECTOR_KEY", "")
# The tap's live page (/inspect/tap/, behind INSPECTOR_KEY): the report file `manage.py tap --report FILE` writes.
PLAYGROUND_TAP_REPORT = os.environ.get("PLAYGROUND_TAP_REPORT", "").strip()
INSPECTOR_TOPICS = [p.strip() for p in os.environ.get("INSPECTOR_TOPICS", "").split(",") if p.strip()]
INSPECTOR_TRANSACTIONAL_IDS = [
    p.strip() for p in os.environ.get("INSPECTOR_TRANSACTIONAL_IDS", "").split(",") if p.strip()
]
INSPECTOR_VALUE_MAX_CHARS = int(os.environ.get("INSPECTOR_VALUE_MAX_CHARS", "64"))  # keys and values shown cut to this
INSPECTOR_HASH_VALUES = os.environ.get("INSPECTOR_HASH_VALUES", "") in ("1", "true", "yes")  # sha256 instead of text
INSPECTOR_FETCH_MAX_BYTES = int(os.environ.get("INSPECTOR_FETCH_MAX_BYTES", str(256 * 1024)))  # per Fetch request
INSPECTOR_WINDOW_RECORDS = int(os.environ.get("INSPECTOR_WINDOW_RECORDS", "200"))  # per window (LSO, end, from)
INSPECTOR_WINDOW_BEFORE_LSO = int(os.environ.get("INSPECTOR_WINDOW_BEFORE_LSO", "20"))
INSPECTOR_MAX_PARTITIONS = int(os.environ.get("INSPECTOR_MAX_PARTITIONS", "64"))  # read per inspection
INSPECTOR_POLL_INTERVAL_S = float(os.environ.get("INSPECTOR_POLL_INTERVAL_S", "5"))  # live pages and answers' cache
INSPECTOR_TXN_LOG_LOOKBACK_S = float(os.environ.get("INSPECTOR_TXN_LOG_LOOKBACK_S", "3600"))  # __transaction_state
INSPECTOR_TXN_LOG_MAX_RECORDS = int(os.environ.get("INSPECTOR_TXN_LOG_MAX_RECORDS", "20000"))  # per poll and partition
INSPECTOR_TXN_HISTORY_MAX = int(os.environ.get("INSPECTOR_TXN_HISTORY_MAX", "1000"))  # records kept per id
# Kafka's transaction.max.timeout.ms default, also find-hanging's --max-transaction-timeout default (15 min).
INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS = int(os.environ.get("INSPECTOR_MAX_TRANSACTION_TIMEOUT_MS", "900000"))
INSPECTOR_REINIT_MAX_PER_HOUR = int(os.environ.get("INSPECTOR_REINIT_MAX_PER_HOUR", "12"))
# an open transaction holding a partition's LSO longer than this is a finding (lso_stall); unset: half of that
# transaction's own transaction.timeout.ms
_lso_stall = os.environ.get("INSPECTOR_LSO_STALL_MS", "").strip()
INSPECTOR_LSO_STALL_MS = int(_lso_stall) if _lso_stall else None
# A fenced epoch active this recently before the InitProducerId that fenced it was a live second instance ("none": any).
_live_gap = os.environ.get("INSPECTOR_LIVE_GAP_S", "5").strip().lower()
INSPECTOR_LIVE_GAP_S = None if _live_gap in ("", "none") else float(_live_gap)
INSPECTOR_REQUEST_TIMEOUT_S = float(os.environ.get("INSPECTOR_REQUEST_TIMEOUT_S", "5"))
