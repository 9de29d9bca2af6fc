"""Serving a room: production mode, the secret key it keeps, the hosts and origins it accepts, and the launcher that
`make run HOST=0.0.0.0` calls to print the join link and start Daphne.

Production mode is on when PLAYGROUND_MODE=production, or when PLAYGROUND_MODE is unset and PLAYGROUND_PUBLIC_URL is
set; PLAYGROUND_MODE=development forces it off. The Makefile sets PLAYGROUND_MODE=production whenever HOST is not a
loopback address or PLAYGROUND_PUBLIC_URL is set; the Dockerfile sets it for the image.

Only the standard library (and Django's ImproperlyConfigured): settings.py imports this module.

    python -m playground.deploy serve --host 0.0.0.0 --port 8000   print "Join at http://<this machine>:8000/w/", run Daphne
    python -m playground.deploy url --host 0.0.0.0 --port 8000     print only the public base URL
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

DEV_SECRET_KEY = "dev-only-not-secret-kafka-txn-playground"
SECRET_KEY_FILE = "secret_key"
MODES = ("production", "development")
WILDCARDS = ("0.0.0.0", "::", "")
# Private destinations for the UDP "connect" that picks the interface of the default route. connect() on a UDP
# socket only selects a route and a source address: no packet is sent, so this works without network access (and
# without DNS). Tried in order; the first that yields a non-loopback address wins.
ROUTE_PROBES = ("10.255.255.255", "192.168.255.255", "172.31.255.255")


# ---------------------------------------------------------------------------------------------------------------
# Which mode


def production_mode(environ=os.environ) -> bool:
    mode = environ.get("PLAYGROUND_MODE", "").strip().lower()
    if mode and mode not in MODES:
        raise ImproperlyConfigured(f"PLAYGROUND_MODE={mode!r}: expected 'production' or 'development' (or unset)")
    if mode:
        return mode == "production"
    return bool(environ.get("PLAYGROUND_PUBLIC_URL", "").strip())


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip().strip("[]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (with or without brackets) and the name localhost; a wildcard is not loopback."""
    if host.strip().lower() in ("localhost", "localhost."):
        return True
    ip = _ip(host)
    return bool(ip and (ip.is_loopback or (ip.version == 6 and ip.ipv4_mapped and ip.ipv4_mapped.is_loopback)))


def is_wildcard(host: str) -> bool:
    return host.strip().strip("[]") in WILDCARDS


# ---------------------------------------------------------------------------------------------------------------
# This machine's address


def primary_ipv4() -> str | None:
    """The IPv4 address of this machine's primary (default-route) interface, without network access: the source
    address the kernel picks for a UDP socket "connected" to a private address (nothing is sent), else the first
    non-loopback IPv4 address the host name resolves to (/etc/hosts, no DNS needed on most machines), else None."""
    for probe in ROUTE_PROBES:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))  # discard port; connect() on UDP sends nothing
                address = s.getsockname()[0]
        except OSError:  # no route at all (no interface up): try the next, then the host name
            continue
        if _usable(address):
            return address
    try:
        _, _, addresses = socket.gethostbyname_ex(socket.gethostname())
    except OSError:
        addresses = []
    for address in addresses:
        if _usable(address):
            return address
    return None


def _usable(address: str) -> bool:
    ip = _ip(address)
    return bool(ip and ip.version == 4 and not ip.is_loopback and not ip.is_unspecified and not ip.is_link_local)


def _host_in_url(host: str) -> str:
    return f"[{host.strip('[]')}]" if ":" in host.strip("[]") else host


def _netloc(scheme: str, host: str, port: int) -> str:
    default = {"http": 80, "https": 443}[scheme]
    return _host_in_url(host) + ("" if port == default else f":{port}")


def default_public_url(host: str, port: int) -> str:
    """The URL a room uses when PLAYGROUND_PUBLIC_URL is not set: http:// and the bound address, or this machine's
    primary IPv4 address when bound to a wildcard (0.0.0.0, ::), or its host name if it has none."""
    if is_wildcard(host):
        host = primary_ipv4() or socket.gethostname()
    return f"http://{_netloc('http', host, port)}"


# ---------------------------------------------------------------------------------------------------------------
# The public URL, and what it implies


@dataclass(frozen=True)
class PublicURL:
    scheme: str  # http | https
    host: str  # as in ALLOWED_HOSTS: lower case, an IPv6 address in brackets
    port: int

    @property
    def origin(self) -> str:
        """scheme://host[:port] as a browser sends it in Origin (no default port), for CSRF_TRUSTED_ORIGINS."""
        return f"{self.scheme}://{_netloc(self.scheme, self.host, self.port)}"

    @property
    def secure(self) -> bool:
        return self.scheme == "https"


def parse_public_url(url: str) -> PublicURL:
    """PLAYGROUND_PUBLIC_URL: http(s)://host[:port][/], the address the room types. No path: the playground is served
    at the root of its host. Anything else raises ImproperlyConfigured naming the variable."""

    def refuse(why: str) -> ImproperlyConfigured:
        return ImproperlyConfigured(f"PLAYGROUND_PUBLIC_URL={url!r}: {why}; expected http(s)://host[:port]")

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise refuse(str(exc)) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise refuse("the scheme must be http or https")
    if not parts.hostname:
        raise refuse("no host")
    if parts.username or parts.password:
        raise refuse("no user or password in it")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise refuse("no path, query or fragment (the playground is served at the root of its host)")
    host = parts.hostname.lower()
    return PublicURL(scheme, _host_in_url(host), port or {"http": 80, "https": 443}[scheme])


LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def _split(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def allowed_hosts(public: PublicURL | None, bind_host: str = "", extra: str = "") -> list[str]:
    """The public URL's host, the address Daphne is bound to (unless a wildcard), localhost, and any extra names
    (DJANGO_ALLOWED_HOSTS, comma-separated), without duplicates, in that order."""
    hosts = [public.host] if public else []
    if bind_host and not is_wildcard(bind_host):
        hosts.append(_host_in_url(bind_host.strip("[]").lower()))
    hosts += LOOPBACK_HOSTS
    hosts += _split(extra)
    return list(dict.fromkeys(hosts))


def csrf_trusted_origins(public: PublicURL | None, bind_host: str = "", port: int | None = None) -> list[str]:
    """The public URL's origin, and http:// origins of the bound address and of localhost on Daphne's port."""
    origins = [public.origin] if public else []
    if port:
        hosts = ([bind_host] if bind_host and not is_wildcard(bind_host) else []) + list(LOOPBACK_HOSTS)
        origins += [f"http://{_netloc('http', host.strip('[]'), port)}" for host in hosts]
    return list(dict.fromkeys(origins))


# ---------------------------------------------------------------------------------------------------------------
# The secret key


SECRET_KEY_MIN_CHARS, SECRET_KEY_MIN_UNIQUE = 50, 5  # Django's own check (security.W009), refused here


def _strong_enough(key: str, where: str) -> str:
    """Django only warns (`check --deploy`, security.W009) about a key this short or this plain; a server reachable
    from elsewhere refuses to start with one."""
    if len(key) < SECRET_KEY_MIN_CHARS or len(set(key)) < SECRET_KEY_MIN_UNIQUE:
        raise ImproperlyConfigured(
            f"{where} has {len(key)} characters ({len(set(key))} different); production mode needs at least "
            f"{SECRET_KEY_MIN_CHARS} ({SECRET_KEY_MIN_UNIQUE} different): unset it and one is generated into "
            "PLAYGROUND_VAR_DIR/secret_key, or `python -c 'import secrets; print(secrets.token_urlsafe(64))'`"
        )
    return key


def secret_key(var_dir: Path, environ=os.environ) -> str:
    """DJANGO_SECRET_KEY if set (never the development key, never a short one), else the key in
    VAR_DIR/secret_key, made on first start."""
    given = environ.get("DJANGO_SECRET_KEY", "").strip()
    if given == DEV_SECRET_KEY:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY is the development key; production mode needs a secret one "
            "(unset it and one is generated into PLAYGROUND_VAR_DIR/secret_key)"
        )
    if given:
        return _strong_enough(given, "DJANGO_SECRET_KEY")
    return _strong_enough(load_or_create_secret_key(Path(var_dir)), str(Path(var_dir) / SECRET_KEY_FILE))


def load_or_create_secret_key(var_dir: Path) -> str:
    """The key kept in var_dir/secret_key; on first start a new one from `secrets`, written with mode 0600.

    Atomic: the key is written and fsynced into a private temporary file, then hard-linked to its name, which fails
    if the name exists. So a reader never sees a half-written file, and when several processes start at once exactly
    one key wins and all of them use it."""
    path = var_dir / SECRET_KEY_FILE
    key = _read_key(path)
    if key:
        return key
    var_dir.mkdir(parents=True, exist_ok=True)
    tmp = var_dir / f".{SECRET_KEY_FILE}.{os.getpid()}.{secrets.token_hex(8)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, (secrets.token_urlsafe(64) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process was first: use its key
    finally:
        tmp.unlink(missing_ok=True)
    key = _read_key(path)
    if not key:
        raise ImproperlyConfigured(f"{path} is empty; delete it and restart, or set DJANGO_SECRET_KEY")
    return key


def _read_key(path: Path) -> str:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return ""
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ImproperlyConfigured(
            f"{path} may be read by others (mode {stat.S_IMODE(mode):04o}); "
            f"`chmod 600 {path}`, or delete it and restart for a new key"
        )
    return path.read_text().strip()


# ---------------------------------------------------------------------------------------------------------------
# The launcher: `make run` in production mode


def join_lines(base_url: str) -> list[str]:
    base = base_url.rstrip("/")
    return [f"Kafka Transaction Playground (production mode): {base}/", f"Join at {base}/w/"]


def serve(host: str, port: int, environ=os.environ) -> None:
    """Print the join link and replace this process by Daphne on host:port, in production mode. The Makefile has
    run migrate and collectstatic (in production mode) just before."""
    env = dict(environ)
    public = env.get("PLAYGROUND_PUBLIC_URL", "").strip() or default_public_url(host, port)
    parse_public_url(public)  # refuse a malformed one here, before Daphne starts
    env.update(
        PLAYGROUND_MODE="production", PLAYGROUND_PUBLIC_URL=public, PLAYGROUND_BIND_HOST=host, PLAYGROUND_PORT=str(port)
    )
    for line in join_lines(public):
        print(line, flush=True)
    if is_wildcard(host) and not environ.get("PLAYGROUND_PUBLIC_URL", "").strip():
        print(
            "(the address of this machine's default route; set PLAYGROUND_PUBLIC_URL if the room reaches it by "
            "another name)",
            flush=True,
        )
    # No "Server: daphne" on every answer (and handshake): what serves the room is nobody's business.
    argv = [
        sys.executable,
        "-m",
        "daphne",
        "--no-server-name",
        "-b",
        host.strip("[]"),
        "-p",
        str(port),
        "playground.asgi:application",
    ]
    os.execve(sys.executable, argv, env)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m playground.deploy", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("serve", "url"))
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    try:
        if args.command == "url":
            url = os.environ.get("PLAYGROUND_PUBLIC_URL", "").strip() or default_public_url(args.host, args.port)
            parse_public_url(url)
            print(url.rstrip("/") + "/")
        else:
            serve(args.host, args.port)
    except ImproperlyConfigured as exc:
        sys.exit(f"playground.deploy: {exc}")
