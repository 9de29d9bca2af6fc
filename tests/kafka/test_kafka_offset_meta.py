"""A committed offset's leader epoch and metadata as real brokers keep and answer them, next to the simulated
cluster of the same release (tests/simserver/offsetmeta.py: plain and transactional commits, metadata over
`offset.metadata.max.bytes`)."""

from __future__ import annotations

import time

import pytest

from tests.kafka.conftest import require_bootstrap
from tests.simserver import offsetmeta, versions

pytestmark = pytest.mark.kafka


# Not Kafka 3.5.2 yet: on a freshly started 3-node 3.5.2 cluster the transaction's offsets were, in 3 of 4 runs, still
# the ones from before it a minute after EndTxn answered (on a cluster that had run a while they settled at once);
# whether that is 3.5's or this exchange's doing is not known yet. The simulator's 3.5 is held to the same answers as
# its 3.9 in tests/simserver/test_offset_meta.py.
@pytest.mark.parametrize("kafka", ["3.9", "4"])
def test_the_real_release_keeps_and_answers_what_each_commit_carried_as_the_simulator_does(kafka):
    real = versions.SocketTarget(require_bootstrap(kafka))
    try:
        theirs = offsetmeta.exchange(real, f"offset-meta-{kafka.replace('.', '')}-{time.time_ns()}")
    finally:
        real.close()
    simulated = versions.CoreTarget(kafka, brokers=3)
    ours = offsetmeta.exchange(simulated, "offset-meta")
    assert list(simulated.core.failures) == []
    assert ours == theirs
    assert theirs["fetched after v8"][0] == (0, 5, 3, "read up to 5", "none")  # what the simulator once left out
