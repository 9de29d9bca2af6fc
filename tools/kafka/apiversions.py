"""Read what the brokers of each Kafka release advertise in ApiVersions off real brokers, and write it to
playground/protocol/advertised.py (the tables the simulated cluster advertises as each release):

    .venv/bin/python tools/kafka/apiversions.py                              # starts a 1-node cluster per release
    .venv/bin/python tools/kafka/apiversions.py --bootstrap 3.9=127.0.0.1:19092 --bootstrap 4=127.0.0.1:19592 \\
        --bootstrap 3.5=127.0.0.1:19792                                      # or asks running ones

Each cluster is one node of `tools/kafka/kafka.sh start` (KRaft, combined mode; 4.x formatted with
transaction.version=2), on free ports in a run directory of its own, stopped once asked. Kafka 3.5.2's brokers
answer ApiVersions v3 at most, so they are asked with v3; the others with v4, which also names the features whose
lowest level is 0 (KIP-1022). tests/simserver/test_apiversions.py asks the test clusters again and compares.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.kafka.wire import advertised  # noqa: E402

KAFKA_SH = ROOT / "tools" / "kafka" / "kafka.sh"
OUT = ROOT / "playground" / "protocol" / "advertised.py"
RELEASES = {"3.5": "3.5.2", "3.9": "3.9.1", "4": "4.4.0"}
REQUEST_VERSION = {"3.5": 3, "3.9": 4, "4": 4}


def free_base_port() -> int:
    """A port free for the broker, with the one 100 above it (kafka.sh's controller port) free too."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port + 100 < 65536:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 100))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free pair of ports")


def ask_new_cluster(kafka: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"apiversions-{kafka}-") as run_dir:
        env = {"KAFKA_RUN_DIR": run_dir, "KAFKA_BASE_PORT": str(free_base_port())}
        base = ["bash", str(KAFKA_SH), "--version", kafka]
        started = subprocess.run(
            [*base, "start", "--nodes", "1"], capture_output=True, text=True, env={**os.environ, **env}
        )
        try:
            if started.returncode != 0:
                raise SystemExit(f"Kafka {kafka} did not start:\n{started.stderr[-3000:]}")
            bootstrap = started.stdout.strip().splitlines()[-1]
            return advertised(bootstrap, REQUEST_VERSION[kafka])
        finally:
            subprocess.run([*base, "stop"], capture_output=True, env={**os.environ, **env})


def render(tables: dict[str, dict[str, Any]]) -> str:
    def mapping(items: dict[Any, tuple[int, int]], per_line: int) -> str:
        cells = [f"{json.dumps(k)}: ({lo}, {hi})" for k, (lo, hi) in sorted(items.items())]
        lines = [", ".join(cells[i : i + per_line]) + "," for i in range(0, len(cells), per_line)]
        return "\n".join(" " * 16 + line for line in lines)

    def table(name: str, key: str, per_line: int, doc: str) -> str:
        body = "\n".join(
            f'        "{kafka}": MappingProxyType(\n            {{\n{mapping(tables[kafka][key], per_line)}\n'
            "            }\n        ),"
            for kafka in RELEASES
        )
        return f"# {doc}\n{name}: Final = MappingProxyType(\n    {{\n{body}\n    }}\n)\n"

    releases = ", ".join(f"{kafka} ({release})" for kafka, release in RELEASES.items())
    return (
        '"""What the brokers of each Kafka release advertise in ApiVersions, read off real brokers of\n'
        f"{releases} by tools/kafka/apiversions.py (generated: run it again rather than editing this file).\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "from types import MappingProxyType\n"
        "from typing import Final\n\n"
        "# fmt: off\n"
        + table("API_KEYS", "api_keys", 8, "api key -> (lowest, highest) version")
        + table(
            "SUPPORTED_FEATURES",
            "supported",
            3,
            "feature -> (lowest, highest) level the broker's software supports (v3 leaves out those whose lowest is 0)",
        )
        + table("FINALIZED_FEATURES", "finalized", 3, "feature -> (lowest, highest) level finalized for the cluster")
        + "# fmt: on\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", action="append", default=[], metavar="KAFKA=HOST:PORT")
    args = parser.parse_args()
    given = dict(item.split("=", 1) for item in args.bootstrap)
    tables = {}
    for kafka in RELEASES:
        if kafka in given:
            tables[kafka] = advertised(given[kafka], REQUEST_VERSION[kafka])
        else:
            tables[kafka] = ask_new_cluster(kafka)
        print(f"Kafka {RELEASES[kafka]}: {len(tables[kafka]['api_keys'])} APIs", file=sys.stderr)
    OUT.write_text(render(tables))
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
