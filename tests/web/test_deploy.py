"""Serving a room: production mode (playground/deploy/production.py, settings.py), `make run HOST=...`, WhiteNoise under a real
Daphne, `check --deploy`, the secret key file, and the Docker files."""

from __future__ import annotations

import gzip
import http.client
import os
import re
import socket
import stat
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import yaml
from django.core.exceptions import ImproperlyConfigured

from playground.deploy import procs
from playground.deploy import production as deploy

ROOT = procs.ROOT


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """os.environ without anything that chooses the mode, the key, the hosts or the database; a fresh VAR_DIR and a
    SQLite file under tmp_path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PLAYGROUND_", "DJANGO_")) and k not in ("DATABASE_URL", "REDIS_URL")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="playground.settings",
        PYTHONPATH=str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""),
        PLAYGROUND_VAR_DIR=str(tmp_path / "var"),
        PLAYGROUND_DB=str(tmp_path / "db.sqlite3"),
    )
    env.update(extra)
    return env


def production_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return clean_env(tmp_path, PLAYGROUND_MODE="production", **extra)


def manage(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=check,
    )


def settings_of(env: dict[str, str], *names: str) -> dict:
    """The values of these settings (repr'd) as a fresh process with this environment loads them."""
    code = textwrap.dedent(f"""
        import django, json
        django.setup()
        from django.conf import settings
        print(json.dumps({{n: repr(getattr(settings, n, None)) for n in {list(names)!r}}}))
    """)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    import json

    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------------------- the mode
@pytest.mark.parametrize(
    "environ, production",
    [
        ({}, False),
        ({"PLAYGROUND_MODE": "production"}, True),
        ({"PLAYGROUND_MODE": "Production "}, True),
        ({"PLAYGROUND_PUBLIC_URL": "http://192.168.1.23:8000"}, True),
        ({"PLAYGROUND_PUBLIC_URL": "  "}, False),
        ({"PLAYGROUND_MODE": "development", "PLAYGROUND_PUBLIC_URL": "http://192.168.1.23:8000"}, False),
    ],
)
def test_production_mode_is_chosen_by_the_mode_or_a_public_url(environ, production):
    assert deploy.production_mode(environ) is production


def test_an_unknown_mode_is_refused():
    with pytest.raises(ImproperlyConfigured, match="PLAYGROUND_MODE"):
        deploy.production_mode({"PLAYGROUND_MODE": "prod"})


@pytest.mark.parametrize(
    "host, loopback",
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.23", False),
        ("example.org", False),
        ("::ffff:127.0.0.1", True),
    ],
)
def test_loopback_hosts(host, loopback):
    assert deploy.is_loopback(host) is loopback


# --------------------------------------------------------------------------------------------------- the address
def test_the_primary_address_is_a_non_loopback_ipv4_address_or_none():
    address = deploy.primary_ipv4()
    if address is not None:  # a machine with no interface but lo has none, and says so
        assert socket.inet_aton(address) and not address.startswith("127.")


def test_the_primary_address_falls_back_to_the_host_name(monkeypatch):
    class NoRoute:
        def __init__(self, *args):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def connect(self, address):
            raise OSError("Network is unreachable")

    monkeypatch.setattr(deploy.socket, "socket", NoRoute)
    monkeypatch.setattr(deploy.socket, "gethostbyname_ex", lambda name: (name, [], ["127.0.1.1", "10.1.2.3"]))
    assert deploy.primary_ipv4() == "10.1.2.3"
    monkeypatch.setattr(deploy.socket, "gethostbyname_ex", lambda name: (name, [], ["127.0.1.1"]))
    assert deploy.primary_ipv4() is None

    def no_name(name):
        raise socket.gaierror("no such name")

    monkeypatch.setattr(deploy.socket, "gethostbyname_ex", no_name)
    assert deploy.primary_ipv4() is None


def test_the_join_link_names_this_machine_when_bound_to_every_interface(monkeypatch):
    monkeypatch.setattr(deploy, "primary_ipv4", lambda: "192.168.1.23")
    assert deploy.default_public_url("0.0.0.0", 8000) == "http://192.168.1.23:8000"
    assert deploy.default_public_url("::", 80) == "http://192.168.1.23"
    assert deploy.default_public_url("10.0.0.5", 8000) == "http://10.0.0.5:8000"
    assert deploy.default_public_url("2001:db8::5", 8000) == "http://[2001:db8::5]:8000"
    assert deploy.join_lines("http://192.168.1.23:8000/")[-1] == "Join at http://192.168.1.23:8000/w/"


# --------------------------------------------------------------------------------------------------- the public URL
def test_public_url_gives_hosts_and_origins():
    public = deploy.parse_public_url("https://WS.Example.org/")
    assert (public.scheme, public.host, public.port, public.origin) == (
        "https",
        "ws.example.org",
        443,
        "https://ws.example.org",
    )
    assert deploy.parse_public_url("http://[2001:db8::1]:8000").origin == "http://[2001:db8::1]:8000"
    lan = deploy.parse_public_url("http://192.168.1.23:8000")
    assert deploy.allowed_hosts(lan, "0.0.0.0", "ws.local, ") == [
        "192.168.1.23",
        "localhost",
        "127.0.0.1",
        "[::1]",
        "ws.local",
    ]
    assert deploy.allowed_hosts(None, "10.0.0.5") == ["10.0.0.5", "localhost", "127.0.0.1", "[::1]"]
    assert deploy.csrf_trusted_origins(lan, "0.0.0.0", 8000) == [
        "http://192.168.1.23:8000",
        "http://localhost:8000",
        "http://127.0.0.1:8000",
        "http://[::1]:8000",
    ]


@pytest.mark.parametrize(
    "url",
    [
        "192.168.1.23:8000",
        "ftp://x.org",
        "http://",
        "http://x.org/workshop",
        "http://x.org:99999",
        "https://user:pw@x.org",
        "http://x.org/?a=1",
    ],
)
def test_a_malformed_public_url_is_refused_naming_the_variable(url):
    with pytest.raises(ImproperlyConfigured, match="PLAYGROUND_PUBLIC_URL"):
        deploy.parse_public_url(url)


# --------------------------------------------------------------------------------------------------- the secret key
def test_two_starts_in_production_mode_use_one_secret_key_kept_in_a_0600_file(tmp_path):
    env = production_env(tmp_path, PLAYGROUND_PUBLIC_URL="http://192.168.1.23:8000")
    first = settings_of(env, "SECRET_KEY", "DEBUG")
    key_file = tmp_path / "var" / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    second = settings_of(env, "SECRET_KEY")
    assert first["SECRET_KEY"] == second["SECRET_KEY"] == repr(key_file.read_text().strip())
    assert first["DEBUG"] == "False"
    key = key_file.read_text().strip()
    assert len(key) >= 50 and key != deploy.DEV_SECRET_KEY
    assert [p.name for p in key_file.parent.iterdir()] == ["secret_key"]  # no temporary file left behind


def test_the_key_file_is_0600_whatever_the_umask(tmp_path):
    previous = os.umask(0)
    try:
        deploy.load_or_create_secret_key(tmp_path)
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "secret_key").stat().st_mode) == 0o600


def _key_in(var_dir: str) -> str:
    return deploy.load_or_create_secret_key(Path(var_dir))


def test_processes_starting_together_agree_on_one_key(tmp_path):
    with ProcessPoolExecutor(8) as pool:
        keys = set(pool.map(_key_in, [str(tmp_path / "var")] * 32))
    assert keys == {(tmp_path / "var" / "secret_key").read_text().strip()}


def test_django_secret_key_wins_and_no_file_is_written(tmp_path):
    env = production_env(tmp_path, DJANGO_SECRET_KEY="k" * 20 + "from-the-environment" + "x" * 20)
    assert settings_of(env, "SECRET_KEY")["SECRET_KEY"] == repr("k" * 20 + "from-the-environment" + "x" * 20)
    assert not (tmp_path / "var" / "secret_key").exists()


def test_production_refuses_the_development_key_and_a_key_file_others_may_read(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="development key"):
        deploy.secret_key(tmp_path, {"DJANGO_SECRET_KEY": deploy.DEV_SECRET_KEY})
    (tmp_path / "secret_key").write_text("x" * 60)
    (tmp_path / "secret_key").chmod(0o644)
    with pytest.raises(ImproperlyConfigured, match="chmod 600"):
        deploy.secret_key(tmp_path, {})


# --------------------------------------------------------------------------------------------------- settings
def test_development_mode_is_what_make_run_always_was(tmp_path):
    values = settings_of(
        clean_env(tmp_path),
        "DEBUG",
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "CHANNEL_LAYERS",
        "DATABASES",
        "MIDDLEWARE",
        "STORAGES",
        "SILENCED_SYSTEM_CHECKS",
    )
    assert values["DEBUG"] == "True"
    assert values["SECRET_KEY"] == repr(deploy.DEV_SECRET_KEY)
    assert values["ALLOWED_HOSTS"] == repr(["127.0.0.1", "localhost", "testserver"])
    assert "InMemoryChannelLayer" in values["CHANNEL_LAYERS"] and "sqlite3" in values["DATABASES"]
    assert "WhiteNoise" not in values["MIDDLEWARE"] and "whitenoise" not in values["STORAGES"]
    assert values["SILENCED_SYSTEM_CHECKS"] == "[]"
    assert not (tmp_path / "var").exists()  # no key file in development


def test_production_on_a_lan_sets_hosts_and_origins_and_silences_only_the_https_checks(tmp_path):
    env = production_env(
        tmp_path,
        PLAYGROUND_PUBLIC_URL="http://192.168.1.23:8000",
        PLAYGROUND_BIND_HOST="0.0.0.0",
        PLAYGROUND_PORT="8000",
        DJANGO_DEBUG="1",
    )
    values = settings_of(
        env,
        "DEBUG",
        "ALLOWED_HOSTS",
        "CSRF_TRUSTED_ORIGINS",
        "SILENCED_SYSTEM_CHECKS",
        "SECURE_SSL_REDIRECT",
        "CSRF_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "MIDDLEWARE",
    )
    assert values["DEBUG"] == "False"  # DJANGO_DEBUG=1 does not turn it on in production
    assert values["ALLOWED_HOSTS"] == repr(["192.168.1.23", "localhost", "127.0.0.1", "[::1]"])
    assert "'http://192.168.1.23:8000'" in values["CSRF_TRUSTED_ORIGINS"]
    assert values["SILENCED_SYSTEM_CHECKS"] == repr(["security.W004", "security.W008", "security.W016"])
    assert (values["SECURE_SSL_REDIRECT"], values["CSRF_COOKIE_SECURE"], values["SECURE_HSTS_SECONDS"]) == (
        "False",
        "False",
        "0",
    )
    assert "playground.deploy.staticfiles.AsyncWhiteNoiseMiddleware" in values["MIDDLEWARE"]


def test_production_middleware_all_runs_on_the_event_loop(tmp_path):
    """One sync-only middleware makes Django hop into a thread and back around it on every request (tools/bench/
    workshop.py measured those waits under load): production mode's chain is async-capable end to end."""
    import ast

    from django.utils.module_loading import import_string

    env = production_env(tmp_path, PLAYGROUND_PUBLIC_URL="http://192.168.1.23:8000")
    chain = ast.literal_eval(settings_of(env, "MIDDLEWARE")["MIDDLEWARE"])
    assert "playground.deploy.staticfiles.AsyncWhiteNoiseMiddleware" in chain
    assert [m for m in chain if not getattr(import_string(m), "async_capable", False)] == []


def test_production_over_https_sets_the_https_settings_instead_of_silencing_them(tmp_path):
    env = production_env(
        tmp_path, PLAYGROUND_PUBLIC_URL="https://ws.example.org", PLAYGROUND_TRUSTED_PROXIES="172.18.0.1"
    )
    values = settings_of(
        env,
        "SECURE_SSL_REDIRECT",
        "CSRF_COOKIE_SECURE",
        "LANGUAGE_COOKIE_SECURE",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS",
        "SECURE_PROXY_SSL_HEADER",
        "SILENCED_SYSTEM_CHECKS",
        "CSRF_TRUSTED_ORIGINS",
    )
    assert values == {
        "SECURE_SSL_REDIRECT": "True",
        "CSRF_COOKIE_SECURE": "True",
        "LANGUAGE_COOKIE_SECURE": "True",
        "SECURE_HSTS_SECONDS": "31536000",
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": "True",
        "SECURE_PROXY_SSL_HEADER": repr(("HTTP_X_FORWARDED_PROTO", "https")),
        "SILENCED_SYSTEM_CHECKS": repr(["security.W021"]),
        "CSRF_TRUSTED_ORIGINS": repr(["https://ws.example.org"]),
    }
    preload = settings_of(
        production_env(tmp_path, PLAYGROUND_PUBLIC_URL="https://ws.example.org", PLAYGROUND_HSTS_PRELOAD="1"),
        "SECURE_HSTS_PRELOAD",
        "SILENCED_SYSTEM_CHECKS",
        "SECURE_PROXY_SSL_HEADER",
    )
    assert preload == {"SECURE_HSTS_PRELOAD": "True", "SILENCED_SYSTEM_CHECKS": "[]", "SECURE_PROXY_SSL_HEADER": "None"}


@pytest.mark.parametrize(
    "extra",
    [
        {"PLAYGROUND_PUBLIC_URL": "http://192.168.1.23:8000"},
        {},  # production mode without a public URL (the image at build time, `docker run` without one)
        {"PLAYGROUND_PUBLIC_URL": "https://ws.example.org", "PLAYGROUND_TRUSTED_PROXIES": "10.0.0.0/8"},
        {"PLAYGROUND_PUBLIC_URL": "https://ws.example.org", "PLAYGROUND_HSTS_PRELOAD": "1"},
    ],
    ids=["lan-http", "no-public-url", "https-behind-proxy", "https-preload"],
)
def test_check_deploy_finds_nothing_in_production_mode(tmp_path, extra):
    result = manage(production_env(tmp_path, **extra), "check", "--deploy", "--fail-level", "WARNING", check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout + result.stderr


def test_a_weak_key_stops_the_server_at_startup_in_production_mode(tmp_path):
    env = production_env(tmp_path, PLAYGROUND_PUBLIC_URL="http://192.168.1.23:8000", DJANGO_SECRET_KEY="short")
    result = manage(env, "check", "--deploy", "--fail-level", "WARNING", check=False)
    # Django's own check (security.W009) only warns; the settings refuse it before any check runs
    assert result.returncode != 0 and "DJANGO_SECRET_KEY has 5 characters" in result.stderr + result.stdout


def test_a_malformed_trusted_proxy_stops_the_server_at_startup(tmp_path):
    result = manage(clean_env(tmp_path, PLAYGROUND_TRUSTED_PROXIES="10.0.0.1, proxy.local"), "check", check=False)
    assert result.returncode != 0 and "PLAYGROUND_TRUSTED_PROXIES" in result.stderr


# --------------------------------------------------------------------------------------------------- a real Daphne
def _get(port: int, path: str, host: str | None = None, **headers: str) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.putrequest("GET", path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{port}")
        for name, value in headers.items():
            conn.putheader(name.replace("_", "-"), value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


@pytest.fixture
def production_daphne(tmp_path):
    """Daphne (procs.start_daphne) in production mode on a LAN-style public URL, after migrate and collectstatic."""
    env = production_env(tmp_path, PLAYGROUND_PUBLIC_URL="http://192.0.2.50:8000", PLAYGROUND_LOG_LEVEL="ERROR")
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "collectstatic", "--noinput", "-v", "0")
    server = procs.start_daphne(env, tmp_path)
    yield server, tmp_path / "var" / "static"
    server.stop()


def test_whitenoise_serves_hashed_compressed_static_files_forever_cacheable_under_daphne(production_daphne):
    server, static_root = production_daphne
    status, _, body = _get(server.port, "/")
    assert status == 200
    css = re.search(r'href="(/static/css/playground\.([0-9a-f]{12})\.css)"', body.decode())
    assert css, "the page should name the hashed file collectstatic made"
    url = css.group(1)
    original = (static_root / "css" / f"playground.{css.group(2)}.css").read_bytes()

    status, headers, plain = _get(server.port, url)
    assert status == 200 and plain == original
    assert headers["cache-control"] == "max-age=315360000, public, immutable"
    assert headers["content-type"].startswith("text/css") and "content-encoding" not in headers

    status, headers, packed = _get(server.port, url, Accept_Encoding="gzip")
    assert status == 200 and headers["content-encoding"] == "gzip" and gzip.decompress(packed) == original
    assert headers["cache-control"] == "max-age=315360000, public, immutable"
    assert "accept-encoding" in headers["vary"].lower()

    # Brotli: WhiteNoise writes .br files only when the Brotli package is installed (it is not a dependency).
    status, headers, body = _get(server.port, url, Accept_Encoding="br, gzip")
    try:
        import brotli
    except ImportError:
        assert not list(static_root.rglob("*.br"))
        assert headers["content-encoding"] == "gzip"
    else:
        assert headers["content-encoding"] == "br" and brotli.decompress(body) == original

    # The unhashed name is still served, but cached only briefly: it changes with the next release.
    status, headers, _ = _get(server.port, "/static/css/playground.css")
    assert status == 200 and "immutable" not in headers["cache-control"]


def test_it_collects_our_own_css_and_js_minified_hashed_as_minified_and_the_vendored_files_as_shipped(
    production_daphne,
):
    """collectstatic writes our stylesheets and scripts minified (deploy/minify.py) under both names, hashes the
    minified text and compresses it; static/ keeps the hand-written files, and the vendored ones are copied as they
    are. The page names the hashed file and WhiteNoise serves it."""
    import hashlib
    import json

    from playground.deploy import minify

    server, static_root = production_daphne
    manifest = json.loads((static_root / "staticfiles.json").read_text())["paths"]
    ours = [n for n in manifest if minify.ours(n)]
    assert {"css/playground.css", "css/pages.css", "js/playground.js", "js/rooms.js"} <= set(ours)
    for name in [*ours, "vendor/htmx/htmx-2.0.11.min.js", "vendor/htmx-ext-ws/ws-2.0.4.min.js"]:
        source = (ROOT / "static" / name).read_bytes()
        served = minify.minify(name, source)
        if minify.ours(name):
            assert len(served) < 0.9 * len(source) and b"\n  " not in served, name
        else:
            assert served == source, name
        hashed = manifest[name]
        stem, ext = os.path.splitext(name)
        assert hashed == f"{stem}.{hashlib.md5(served).hexdigest()[:12]}{ext}", name
        assert (static_root / hashed).read_bytes() == served == (static_root / name).read_bytes(), name
        assert gzip.decompress((static_root / f"{hashed}.gz").read_bytes()) == served, name
    status, _, body = _get(server.port, "/")
    assert status == 200 and f"/static/{manifest['css/playground.css']}" in body.decode()
    source = (ROOT / "static/css/playground.css").read_bytes()
    assert source.startswith(b"/*")  # the source as written, comments and all
    status, _, css = _get(server.port, f"/static/{manifest['css/playground.css']}")
    assert status == 200 and css == minify.minify("css/playground.css", source) and len(css) < 0.9 * len(source)


def test_production_daphne_checks_the_host_and_serves_the_room(production_daphne):
    server, _ = production_daphne
    assert _get(server.port, "/healthz", host="192.0.2.50:8000")[0] == 200  # the public URL's host
    assert _get(server.port, "/healthz", host="localhost")[0] == 200
    status, _, body = _get(server.port, "/", host="evil.example")
    assert status == 400 and b"Traceback" not in body  # DEBUG is off: no debug page
    status, _, body = _get(server.port, "/static/no-such-file.css")
    assert status == 404 and b"Traceback" not in body


# --------------------------------------------------------------------------------------------------- the launcher
def test_the_launcher_prints_the_join_link_and_serves_in_production_mode(tmp_path):
    port = procs.free_port()
    public = f"http://192.0.2.50:{port}"
    env = clean_env(tmp_path, PLAYGROUND_PUBLIC_URL=public, PLAYGROUND_LOG_LEVEL="ERROR")
    manage(dict(env, PLAYGROUND_MODE="production"), "migrate", "--noinput", "-v", "0")
    manage(dict(env, PLAYGROUND_MODE="production"), "collectstatic", "--noinput", "-v", "0")
    log = tmp_path / "launcher.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "playground.deploy", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        procs._wait_port(port, proc, 30, "launcher", log)
        deadline = time.monotonic() + 20
        while True:
            try:
                status, _, _ = _get(port, "/healthz", host=f"192.0.2.50:{port}")
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert status == 200
        assert f"Join at {public}/w/" in log.read_text().splitlines()
        assert _get(port, "/healthz", host="evil.example")[0] == 400
    finally:
        procs.Proc(proc, port).stop()


def test_the_url_command_prints_this_machines_address(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "playground.deploy", "url", "--host", "0.0.0.0", "--port", "8000"],
        env=clean_env(tmp_path),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    address = deploy.primary_ipv4() or socket.gethostname()
    assert out.stdout.strip() == f"http://{address}:8000/"
    bad = subprocess.run(
        [sys.executable, "-m", "playground.deploy", "url"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=clean_env(tmp_path, PLAYGROUND_PUBLIC_URL="x.org"),
        timeout=30,
    )
    assert bad.returncode != 0 and "PLAYGROUND_PUBLIC_URL" in bad.stderr


# --------------------------------------------------------------------------------------------------- the Makefile
def make_run(tmp_path: Path, *args: str, **environ: str) -> list[str]:
    """`make run ARGS` with python and daphne replaced by scripts that print their arguments and the mode (and
    `venv` taken as done): the commands make would run, and in which mode."""
    fake = tmp_path / "fakevenv" / "bin"
    fake.mkdir(parents=True, exist_ok=True)
    for name in ("python", "daphne"):
        script = fake / name
        script.write_text(f'#!/bin/sh\necho "{name} $* [mode=${{PLAYGROUND_MODE:-}}]"\n')
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLAYGROUND_", "MAKE"))}
    env.update(environ)
    out = subprocess.run(
        ["make", "--no-print-directory", "-s", "-o", "venv", "run", f"VENV={fake.parent}", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_make_run_on_loopback_is_unchanged(tmp_path):
    for args in ((), ("HOST=127.0.0.1",), ("HOST=localhost",), ("HOST=::1",)):
        host = dict(a.split("=", 1) for a in args).get("HOST", "127.0.0.1")
        assert make_run(tmp_path, *args) == [
            "python manage.py migrate --noinput [mode=]",
            f"Kafka Transaction Playground: http://{host}:8000/",
            f"daphne --no-server-name -b {host} -p 8000 playground.asgi:application [mode=]",
        ]


@pytest.mark.parametrize(
    "args, environ, host",
    [
        (("HOST=0.0.0.0",), {}, "0.0.0.0"),
        (("HOST=192.168.1.23", "PORT=8080"), {}, "192.168.1.23"),
        ((), {"PLAYGROUND_PUBLIC_URL": "https://ws.example.org"}, "127.0.0.1"),
        (("PLAYGROUND_MODE=production",), {}, "127.0.0.1"),
    ],
)
def test_make_run_elsewhere_than_loopback_collects_static_files_and_serves_in_production_mode(
    tmp_path, args, environ, host
):
    port = "8080" if "PORT=8080" in args else "8000"
    assert make_run(tmp_path, *args, **environ) == [
        "python manage.py migrate --noinput [mode=production]",
        "python manage.py collectstatic --noinput -v 0 [mode=production]",
        f"python -m playground.deploy serve --host {host} --port {port} [mode=production]",
    ]


# --------------------------------------------------------------------------------------------------- Docker
def test_compose_runs_postgres_and_the_playground_in_production_mode():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"kafka-1", "kafka-2", "kafka-3", "redis", "postgres", "playground"} <= set(services)

    postgres = services["postgres"]
    assert postgres["image"].split(":")[0] == "postgres"
    assert {"POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"} <= set(postgres["environment"])
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    volume, _, mount = postgres["volumes"][0].partition(":")
    assert volume in compose["volumes"] and mount == "/var/lib/postgresql"  # the 18+ image's documented mount
    assert "ports" not in postgres  # reachable on the compose network only

    playground = services["playground"]
    env = playground["environment"]
    assert env["PLAYGROUND_MODE"] == "production"
    assert env["PLAYGROUND_PUBLIC_URL"].startswith("${PLAYGROUND_PUBLIC_URL:-http")
    assert env["REDIS_URL"] == "redis://redis:6379/0"
    assert env["KAFKA_BOOTSTRAP_SERVERS"] == "kafka-1:29092,kafka-2:29092,kafka-3:29092"
    # The database URL, with compose's ${...} filled in as compose would, is one the app accepts.
    from playground.deploy import dburl

    database_url = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), env["DATABASE_URL"])
    db = dburl.parse(database_url)
    assert (db["ENGINE"], db["HOST"], db["PORT"]) == ("django.db.backends.postgresql", "postgres", "5432")
    assert (db["USER"], db["NAME"]) == (
        postgres["environment"]["POSTGRES_USER"],
        postgres["environment"]["POSTGRES_DB"],
    )
    assert (
        re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), postgres["environment"]["POSTGRES_PASSWORD"])
        == db["PASSWORD"]
    )
    assert playground["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert playground["depends_on"]["redis"]["condition"] == "service_healthy"
    var_volume, _, var_mount = playground["volumes"][0].partition(":")
    assert var_volume in compose["volumes"] and var_mount == "/app/var"  # the secret key survives re-creation
    assert deploy.parse_public_url(re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), env["PLAYGROUND_PUBLIC_URL"]))


def test_the_image_collects_static_files_and_runs_in_production_mode():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ENV PLAYGROUND_MODE=production", dockerfile, re.M)
    assert "manage.py collectstatic --noinput" in dockerfile
    assert "PLAYGROUND_STATIC_ROOT=/app/staticfiles" in dockerfile
    # collectstatic runs after the source is copied and as the app user, before the command.
    assert (
        dockerfile.index("COPY")
        < dockerfile.index("USER app")
        < dockerfile.index("collectstatic")
        < dockerfile.index("CMD")
    )
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"var", ".venv", ".git", "db.sqlite3"} <= set(ignored)
