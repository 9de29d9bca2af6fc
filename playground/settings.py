"""Django settings. Embedded defaults (SQLite, in-memory channel layer, the simulator) so `make run` works on a
bare machine; DATABASE_URL, REDIS_URL and KAFKA_BOOTSTRAP_SERVERS switch on the real parts."""

import os
from pathlib import Path

from playground import dburl

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("PLAYGROUND_VAR_DIR", BASE_DIR / "var"))

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "dev-only-not-secret-kafka-txn-playground")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.contenttypes",
    "django.contrib.staticfiles",
    "channels",
    "playground",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
        },
    }
]
ASGI_APPLICATION = "playground.asgi.application"


def database_settings(url: str) -> dict:
    """The DATABASES entry for a DATABASE_URL value (playground/dburl.py has the forms): postgres://user:password@
    host:port/name (or postgresql://, or a unix socket) for PostgreSQL through psycopg 3, sqlite:///absolute/path for
    SQLite; "" for SQLite in PLAYGROUND_DB (default ./db.sqlite3), what `make run` has always used. A malformed URL
    raises ImproperlyConfigured naming DATABASE_URL, so the server stops at startup saying why."""
    database = dburl.parse(url) if url else {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("PLAYGROUND_DB", str(BASE_DIR / "db.sqlite3")),
    }
    if database["ENGINE"] == "django.db.backends.sqlite3":
        # Two Daphne processes may share one SQLite file; wait for the lock instead of failing.
        # WAL: readers never wait for the writer, and a commit costs no fsync (synchronous=NORMAL), which keeps
        # a command's round trip short; the database survives a crash of the server, at worst losing the last
        # commands of a power cut.
        database["OPTIONS"] = {"timeout": 20, "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"}
    else:
        # CONN_MAX_AGE=0: a connection per request (and per database_sync_to_async call), closed at its end. Under
        # Daphne, Django's sync code runs in asgiref's executor threads; a persistent connection would be held per
        # thread, and closed only when that thread next runs Django code past its age. Django's docs: "When using
        # ASGI, persistent connections should be disabled". The price is a login per request: a few ms on a unix
        # socket, more with scram-sha-256 over TCP. If that shows, the answer is a pool (pgbouncer, or Django's
        # psycopg pool: OPTIONS {"pool": True} with the psycopg-pool package), not persistent connections.
        # OPTIONS: only what the URL carried (sslmode, connect_timeout, ...). psycopg 3's defaults are what we want:
        # Django manages autocommit and transactions, client-side parameter binding, no pool.
        database["CONN_MAX_AGE"] = 0
        database.setdefault("OPTIONS", {})
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
STATIC_ROOT = VAR_DIR / "static"

SCENARIO_DIR = BASE_DIR / "scenarios"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("PLAYGROUND_LOG_LEVEL", "WARNING")},
}

# The dashboard (playground/session.py, limits.py): pause between steps of "run", live backends kept per process,
# per-session and per-client limits (see playground/limits.py for the names and defaults).
PLAYGROUND_RUN_STEP_MS = int(os.environ.get("PLAYGROUND_RUN_STEP_MS", "800"))
PLAYGROUND_LIVE_SESSIONS = int(os.environ.get("PLAYGROUND_LIVE_SESSIONS", "200"))
# Simulator checkpoints (every 100 commands of a session, so that going back or scrubbing replays at most 99):
# memory for all sessions of a process, in MiB; the least recently used sessions lose theirs first.
PLAYGROUND_CHECKPOINT_MB = float(os.environ.get("PLAYGROUND_CHECKPOINT_MB", "256"))
PLAYGROUND_LIMITS = {}
PLAYGROUND_DEFAULT_BACKEND = os.environ.get("PLAYGROUND_DEFAULT_BACKEND", "sim")
# More backends by name, "module:Class" (the web tests register their fake this way in server processes).
PLAYGROUND_BACKENDS = dict(
    item.split("=", 1) for item in os.environ.get("PLAYGROUND_BACKENDS", "").split(",") if "=" in item
)
