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
# (A .dockerignore listing .git, .venv, var, tools/kafka/.jars and
# tools/kafka/.run keeps the build context small.)
COPY --chown=app:app . /app
RUN pip install -c requirements.lock .
USER app

ENV REDIS_URL=redis://redis:6379/0 \
    KAFKA_BOOTSTRAP_SERVERS=kafka-1:29092,kafka-2:29092,kafka-3:29092

EXPOSE 8000

CMD ["sh", "-c", "python manage.py migrate --noinput && exec daphne -b 0.0.0.0 -p 8000 playground.asgi:application"]
