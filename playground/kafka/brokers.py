"""A scenario's broker steps on a real cluster: which broker a step names, and stopping or starting it through the
server's broker control command.

`broker.stop` / `broker.start` name a broker by id, as the coordinator of a transactional id (FindCoordinator, as a
client finds it) or as the leader of a partition (Metadata). The command comes from the server's settings only
(KAFKA_BROKER_CONTROL, e.g. tools/kafka/kafka.sh's stop-node/start-node), is never run through a shell and is bounded
in time.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from playground.engine.backend import BackendError
from playground.engine.spec import Step
from playground.kafka.names import SessionNames
from playground.kafka.observer import Observer, ObserverError

BROKER_CONTROL_TIMEOUT_S = 150.0
BROKER_SETTLE_TIMEOUT_S = 30.0  # until the cluster's metadata agrees that the broker stopped or started


def broker_of(step: Step, observer: Observer, names: SessionNames, txids: list[str]) -> int:
    """The broker a broker step names: `coordinator_of` a transactional id of the session, `leader_of` a
    topic-partition (the simulator's extension: whichever broker leads it now), or `broker` by id."""
    if "coordinator_of" in step.args:
        txid = str(step.args["coordinator_of"])
        if txid not in txids:
            raise BackendError(f"{step.label}: {txid!r} is not a transactional id of this session")
        try:
            return observer.coordinator_of(names.prefix + txid)
        except ObserverError as e:
            raise BackendError(f"{step.label}: cannot find the coordinator of {txid!r}: {e}") from None
    if "leader_of" in step.args:
        try:
            return observer.leader_of(*names.real_tp(str(step.args["leader_of"])))
        except ObserverError as e:
            raise BackendError(f"{step.label}: {e}") from None
    return int(step.args["broker"])


def run_broker_control(template: str, base_dir: Path, action: str, broker: int, label: str) -> None:
    """KAFKA_BROKER_CONTROL from settings, e.g. `bash tools/kafka/kafka.sh {action}-node {broker}`: split like a
    shell would, {action} and {broker} filled in per argument (never through a shell), bounded in time."""
    argv = [part.format(action=action, broker=int(broker)) for part in shlex.split(template)]
    try:
        proc = subprocess.run(
            argv,
            cwd=str(base_dir),
            capture_output=True,
            text=True,
            timeout=BROKER_CONTROL_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BackendError(f"{label}: the broker control command failed: {e}") from None
    if proc.returncode != 0:
        raise BackendError(
            f"{label}: the broker control command exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
        )
