# Kafka Transaction Playground web app (Django + Channels, served by daphne).
# Used by docker-compose.yml; Kafka and Redis run as separate services there.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONPATH=/app \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 1000 app \
    && mkdir -p /app/var \
    && chown app:app /app /app/var
WORKDIR /app

# confluent-kafka ships manylinux wheels with librdkafka bundled, so no
# compiler or system librdkafka is needed. requirements.lock pins the tree.
# PYTHONPATH=/app: manage.py and daphne import the source tree in /app, so
# BASE_DIR (templates, static, scenarios) is /app, not site-packages.
# (.dockerignore keeps .git, .venv, var (a secret key, databases), tools/kafka's
# jars and run state out of the build context.)
COPY --chown=app:app . /app
RUN pip install -c requirements.lock .
USER app

# The image always runs in production mode (playground/deploy/production.py): DEBUG off, the secret key from DJANGO_SECRET_KEY
# or made on first start into /app/var/secret_key (mode 0600; docker-compose.yml keeps /app/var in a volume), hosts
# from PLAYGROUND_PUBLIC_URL, static files served by WhiteNoise. Without DATABASE_URL, SQLite in /app/var too.
# Static files are collected here, at build time, into /app/staticfiles: hashed names, .gz variants, a manifest.
# Outside /app/var on purpose: a volume there would keep the first image's files and hide a rebuilt image's.
# The DJANGO_SECRET_KEY on that one line only lets the settings load; it is in no ENV, and no key file is written.
ENV PLAYGROUND_MODE=production \
    PLAYGROUND_VAR_DIR=/app/var \
    PLAYGROUND_DB=/app/var/db.sqlite3 \
    PLAYGROUND_STATIC_ROOT=/app/staticfiles
RUN DJANGO_SECRET_KEY=collectstatic-at-build-time-only-never-used-to-sign-anything \
    python manage.py collectstatic --noinput -v 1

ENV REDIS_URL=redis://redis:6379/0 \
    KAFKA_BOOTSTRAP_SERVERS=kafka-1:29092,kafka-2:29092,kafka-3:29092

EXPOSE 8000
VOLUME ["/app/var"]

HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=6 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

# PLAYGROUND_PUBLIC_URL (docker-compose.yml sets it) is where the room joins; it is printed at start.
CMD ["sh", "-c", "python manage.py migrate --noinput && if [ -n \"$PLAYGROUND_PUBLIC_URL\" ]; then echo \"Join at ${PLAYGROUND_PUBLIC_URL%/}/w/\"; fi && exec daphne --no-server-name -b 0.0.0.0 -p 8000 playground.asgi:application"]
