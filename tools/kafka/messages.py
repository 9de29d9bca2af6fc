"""Copy Kafka's own message definitions into playground/protocol/kafka_messages/<release>/, from the release's
kafka-clients jar (`bash tools/kafka/kafka.sh fetch [--version 4]` puts it in tools/kafka/.jars*):

    .venv/bin/python tools/kafka/messages.py

The simulated cluster serves versions kio has no schema for (playground/protocol/kafkajson.py builds their classes
from these): Kafka 3.9.1's definitions for the versions Kafka 4.0 removed (KIP-896) that the brokers of 3.5 and 3.9
still serve, and Kafka 4.4.0's for the versions it added after kio's schemas.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "playground" / "protocol" / "kafka_messages"

# release -> (its jars' folder, the APIs whose definitions are copied from it)
COPIED = {
    "3.9.1": (
        ".jars",
        (
            "Produce",
            "Fetch",
            "ListOffsets",
            "OffsetCommit",
            "OffsetFetch",
            "CreateTopics",
            "DeleteTopics",
            "OffsetForLeaderEpoch",
            "WriteTxnMarkers",
            "DescribeConfigs",
        ),
    ),
    "4.4.0": (".jars-4.4.0", ("TxnOffsetCommit", "DeleteGroups")),
}


def main() -> int:
    for release, (folder, apis) in COPIED.items():
        jar = ROOT / "tools" / "kafka" / folder / f"kafka-clients-{release}.jar"
        if not jar.exists():
            print(f"{jar} is missing: bash tools/kafka/kafka.sh fetch --version {release}", file=sys.stderr)
            return 1
        target = OUT / release
        target.mkdir(parents=True, exist_ok=True)
        for old in target.glob("*.json"):
            old.unlink()
        with zipfile.ZipFile(jar) as z:
            for api in apis:
                for kind in ("Request", "Response"):
                    name = f"{api}{kind}.json"
                    (target / name).write_bytes(z.read(f"common/message/{name}"))
        print(f"{release}: {2 * len(apis)} definitions into {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
