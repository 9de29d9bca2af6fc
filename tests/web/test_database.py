"""The database switch: DATABASE_URL's forms (playground/deploy/dburl.py, settings.database_settings), the throw-away
PostgreSQL that PLAYGROUND_TEST_DATABASE=postgres puts under every database test (tests/conftest.py, tests/pg.py),
and a model's round trip through the ORM on whichever database is active."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection, transaction

from playground.deploy import dburl, procs
from playground.models import Session
from playground.settings import database_settings

PG = "django.db.backends.postgresql"
SQLITE = "django.db.backends.sqlite3"


def _connection_part(url: str) -> tuple:
    d = dburl.parse(url)
    return d["ENGINE"], d.get("NAME"), d.get("USER"), d.get("PASSWORD"), d.get("HOST"), d.get("PORT"), d.get("OPTIONS")


@pytest.mark.django_db
def test_it_runs_on_the_database_that_PLAYGROUND_TEST_DATABASE_names(throwaway_postgres):
    if os.environ.get("PLAYGROUND_TEST_DATABASE", "").strip().lower() == "postgres":
        assert throwaway_postgres is not None
        assert connection.vendor == "postgresql"
        # Through the unix socket, the directory percent-encoded as the host (no server address then).
        assert connection.settings_dict["HOST"] == str(throwaway_postgres.socket_dir)
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_database(), inet_server_addr(), current_setting('port')::int, version()")
            name, addr, port, version = cursor.fetchone()
        assert (name, addr, port) == ("test_playground", None, throwaway_postgres.port)
        assert version.startswith("PostgreSQL ")
        # What the servers a test starts inherit (procs.django_env copies os.environ): the same server.
        assert os.environ["DATABASE_URL"] == throwaway_postgres.socket_url()
        # The TCP form reaches the same server on 127.0.0.1, with the password, and without it is refused.
        import psycopg

        tcp = dburl.parse(throwaway_postgres.url())
        with psycopg.connect(
            host=tcp["HOST"], port=tcp["PORT"], user=tcp["USER"], password=tcp["PASSWORD"], dbname=tcp["NAME"]
        ) as conn:
            row = conn.execute("SELECT inet_server_addr()::text, inet_server_port(), current_user").fetchone()
        assert row == ("127.0.0.1/32", throwaway_postgres.port, "playground")
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(host=tcp["HOST"], port=tcp["PORT"], user=tcp["USER"], password="wrong", dbname=tcp["NAME"])
    else:
        assert throwaway_postgres is None
        url = os.environ.get("DATABASE_URL", "").strip()
        expected = {SQLITE: "sqlite", PG: "postgresql"}[dburl.parse(url)["ENGINE"]] if url else "sqlite"
        assert connection.vendor == expected


@pytest.mark.parametrize(
    "url, expected",
    [
        (
            "postgres://kafka:s3cret@db.example:5433/playground",
            (PG, "playground", "kafka", "s3cret", "db.example", "5433", {}),
        ),
        ("postgresql://kafka@127.0.0.1/playground", (PG, "playground", "kafka", "", "127.0.0.1", "", {})),
        ("POSTGRES://kafka@localhost/Playground", (PG, "Playground", "kafka", "", "localhost", "", {})),
        # Percent-encoded user, password and name: "@", ":" and "/" inside them.
        ("postgres://k%40fka:p%40ss%3Aw%2Frd@h/my%20db", (PG, "my db", "k@fka", "p@ss:w/rd", "h", "", {})),
        ("postgres://kafka@[::1]:5432/playground", (PG, "playground", "kafka", "", "::1", "5432", {})),
        # A unix-socket directory: as ?host=, or percent-encoded as the host (case kept).
        (
            "postgres://kafka@/playground?host=/var/run/postgresql",
            (PG, "playground", "kafka", "", "/var/run/postgresql", "", {}),
        ),
        (
            "postgres://kafka@%2Ftmp%2FPG-Sock:6543/playground",
            (PG, "playground", "kafka", "", "/tmp/PG-Sock", "6543", {}),
        ),
        ("postgres:///playground?host=/run/pg&port=5444", (PG, "playground", "", "", "/run/pg", "5444", {})),
        ("postgres:///playground", (PG, "playground", "", "", "", "", {})),
        (
            "postgres://h/playground?sslmode=require&connect_timeout=5",
            (PG, "playground", "", "", "h", "", {"sslmode": "require", "connect_timeout": "5"}),
        ),
        ("  postgres://h/playground  ", (PG, "playground", "", "", "h", "", {})),
        (
            "sqlite:///var/lib/playground/db.sqlite3",
            (SQLITE, "/var/lib/playground/db.sqlite3", None, None, None, None, None),
        ),
        ("sqlite:////tmp/x.sqlite3", (SQLITE, "/tmp/x.sqlite3", None, None, None, None, None)),
        ("sqlite:///tmp/with%20space.db", (SQLITE, "/tmp/with space.db", None, None, None, None, None)),
    ],
)
def test_it_parses_the_forms_of_DATABASE_URL(url, expected):
    assert _connection_part(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "nonsense",
        "/tmp/db.sqlite3",
        "mysql://kafka:hunter2@h/playground",
        "http://h/playground",
        "postgres://kafka:hunter2@h:notaport/playground",
        "postgres://kafka:hunter2@h:0/playground",
        "postgres://kafka:hunter2@h:70000/playground",
        "postgres://kafka:hunter2@h/",
        "postgres://kafka:hunter2@h",
        "postgres://kafka:hunter2@h/a/b",
        "postgres://kafka:hunter2@h:1:2/playground",
        "postgres://kafka:hunter2@[::1/playground",
        "postgres://kafka:hunter2@[::1]x/playground",
        "postgres://kafka:hunter2@h/playground?bogus=1",
        "postgres://kafka:hunter2@h/playground?sslmode=require&sslmode=disable",
        "postgres://kafka:hunter2@h/playground?host=/run/pg",
        "postgres://kafka:hunter2@h:5432/playground?port=5433",
        "postgres://kafka:hunter2@h/playground?sslmode",
        "postgres://kafka:hunter2@h/playground#frag",
        "sqlite://relative.db",
        "sqlite://",
        "sqlite:///",
        "sqlite:///tmp/dir/",
        "sqlite:///tmp/db.sqlite3?mode=ro",
        "kafka:hunter2@h/playground",
    ],
)
def test_it_rejects_a_malformed_DATABASE_URL_naming_the_variable(url):
    with pytest.raises(ImproperlyConfigured) as raised:
        dburl.parse(url)
    message = str(raised.value)
    assert message.startswith("DATABASE_URL=") and "expected postgres://" in message
    assert "hunter2" not in message


def test_it_keeps_SQLite_in_PLAYGROUND_DB_without_DATABASE_URL_and_sets_each_engine_up(monkeypatch, tmp_path):
    monkeypatch.setenv("PLAYGROUND_DB", str(tmp_path / "here.sqlite3"))
    sqlite = database_settings("")
    assert sqlite == {
        "ENGINE": SQLITE,
        "NAME": str(tmp_path / "here.sqlite3"),
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
    }
    assert database_settings(f"sqlite://{tmp_path}/there.db")["OPTIONS"] == sqlite["OPTIONS"]
    pg = database_settings("postgresql://kafka:pw@127.0.0.1:5432/playground")
    assert pg == {
        "ENGINE": PG,
        "NAME": "playground",
        "USER": "kafka",
        "PASSWORD": "pw",
        "HOST": "127.0.0.1",
        "PORT": "5432",
        "OPTIONS": {"pool": {"min_size": 1, "max_size": 20, "timeout": 10.0}},
        "CONN_MAX_AGE": 0,
    }
    assert database_settings("postgres://h/p?sslmode=verify-full")["OPTIONS"]["sslmode"] == "verify-full"


def test_it_lets_two_threads_write_one_SQLite_file_when_one_read_first(tmp_path, django_db_blocker):
    """Django's ASGI handler runs each request in a thread of its own: a transaction that reads, then writes after
    another thread's commit (a seat created while an attendee's step lands) waits for the lock instead of failing
    with "database is locked" (a deferred transaction's SQLITE_BUSY_SNAPSHOT ignores the timeout)."""
    from django.db.backends.sqlite3.base import DatabaseWrapper

    settings_dict = {
        **database_settings(f"sqlite://{tmp_path}/two.db"),
        "TIME_ZONE": None,
        "CONN_HEALTH_CHECKS": False,
        "CONN_MAX_AGE": 0,
        "AUTOCOMMIT": True,
        "ATOMIC_REQUESTS": False,
        "TEST": {},
    }
    with django_db_blocker.unblock():  # a file of the test's own, not the test database
        setup = DatabaseWrapper(settings_dict)
        with setup.cursor() as c:
            c.execute("CREATE TABLE t (v INTEGER)")
        setup.close()
        read, other_committed, errors = threading.Event(), threading.Event(), []

        def reader_then_writer():
            conn = DatabaseWrapper(settings_dict)
            try:
                with _atomic(conn):
                    conn.cursor().execute("SELECT count(*) FROM t").fetchone()
                    read.set()
                    other_committed.wait(timeout=0.5)  # the other thread is blocked behind our lock: it cannot commit
                    conn.cursor().execute("INSERT INTO t VALUES (1)")
            except Exception as exc:
                errors.append(exc)
            finally:
                conn.close()

        def writer():
            conn = DatabaseWrapper(settings_dict)
            try:
                read.wait(timeout=5)
                with _atomic(conn):
                    conn.cursor().execute("INSERT INTO t VALUES (2)")
                other_committed.set()
            except Exception as exc:
                errors.append(exc)
            finally:
                conn.close()

        threads = [threading.Thread(target=reader_then_writer), threading.Thread(target=writer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert errors == []
        check = DatabaseWrapper(settings_dict)
        assert sorted(r[0] for r in check.cursor().execute("SELECT v FROM t").fetchall()) == [1, 2]
        check.close()


@contextlib.contextmanager
def _atomic(conn):
    """What transaction.atomic does on SQLite (BEGIN in the configured transaction_mode), on a connection object of
    the test's own rather than one of settings.DATABASES."""
    conn.ensure_connection()
    conn.set_autocommit(False, force_begin_transaction_with_broken_autocommit=True)
    try:
        yield
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    finally:
        conn.set_autocommit(True)


def test_it_stops_at_startup_on_a_malformed_DATABASE_URL():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "playground.settings", "DATABASE_URL": "mysql://kafka:hunter2@h/db"}
    done = subprocess.run(
        [sys.executable, str(procs.ROOT / "manage.py"), "check"],
        env=env,
        cwd=procs.ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "ImproperlyConfigured: DATABASE_URL='mysql://kafka:***@h/db': unsupported scheme 'mysql'" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout


@pytest.mark.django_db
def test_it_round_trips_a_session_through_the_orm():
    row = Session.objects.create(
        scenario_id="僵尸-fencing ✓", backend="sim", seed=-(2**31), version=3, client_key="k" * 64
    )
    again = Session.objects.get(pk=row.pk)
    assert (again.scenario_id, again.backend, again.seed, again.version, again.running, again.client_key) == (
        "僵尸-fencing ✓",
        "sim",
        -(2**31),
        3,
        False,
        "k" * 64,
    )
    assert again.created_at == row.created_at and again.created_at.utcoffset() is not None
    from django.db.models import F

    assert Session.objects.filter(pk=row.pk, version=3).update(version=F("version") + 1) == 1
    assert Session.objects.filter(scenario_id__startswith="僵尸").get().version == 4
    later = Session.objects.create(scenario_id="later")
    assert list(Session.objects.values_list("scenario_id", flat=True)) == ["later", "僵尸-fencing ✓"]  # -created_at
    Session.objects.filter(pk__in=[row.pk, later.pk]).delete()
    assert not Session.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_it_rolls_back_a_failed_transaction_and_keeps_a_committed_one():
    with transaction.atomic():
        kept = Session.objects.create(scenario_id="kept")
    with pytest.raises(RuntimeError), transaction.atomic():
        Session.objects.create(scenario_id="rolled back")
        with transaction.atomic():  # a savepoint inside
            Session.objects.select_for_update().get(pk=kept.pk)
        raise RuntimeError("abort")
    assert list(Session.objects.values_list("scenario_id", flat=True)) == ["kept"]


def test_it_points_the_servers_a_test_starts_at_the_same_database(throwaway_postgres, tmp_path):
    """procs.django_env copies os.environ: with the throw-away PostgreSQL, DATABASE_URL wins over the SQLite path it
    is given, and a `migrate` run there lands in the server's `playground` database."""
    env = procs.django_env(tmp_path / "own.sqlite3")
    assert env.get("DATABASE_URL") == os.environ.get("DATABASE_URL")
    if throwaway_postgres is None and os.environ.get("DATABASE_URL"):
        return  # a database of the developer's own: not one to migrate from a test
    procs.migrate(env)
    if throwaway_postgres is None:
        assert (tmp_path / "own.sqlite3").exists()
        return
    assert not (tmp_path / "own.sqlite3").exists()
    import psycopg

    with psycopg.connect(throwaway_postgres.url()) as conn:
        applied = conn.execute("SELECT count(*) FROM django_migrations WHERE app = 'playground'").fetchone()[0]
    assert applied >= 1
