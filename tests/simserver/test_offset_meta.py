"""A committed offset's leader epoch and metadata, kept and answered as Kafka keeps them (tests/simserver/offsetmeta.py
says what is asked; tests/kafka/test_kafka_offset_meta.py asks real brokers the same)."""

from __future__ import annotations

import pytest

from playground.simserver.bounds import Bounds
from tests.simserver import offsetmeta, versions


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_answers_the_epoch_and_metadata_each_commit_carried(kafka):
    target = versions.CoreTarget(kafka)
    out = offsetmeta.exchange(target, "meta")
    assert list(target.core.failures) == []
    assert out["commit v8"] == [(0, "none"), (1, "offset_metadata_too_large")]
    assert out["fetched after v8"] == [(0, 5, 3, "read up to 5", "none"), (1, -1, -1, "", "none")]
    # a commit without an epoch and with null metadata leaves neither of the first commit's behind
    assert out["commit v5"] == [(0, "none")]
    assert out["commit v8 again"] == [(1, "none")]  # 2,049 characters: under the bound, whatever its bytes
    assert out["fetched after v5"] == [(0, 6, -1, "", "none"), (1, 9, 0, offsetmeta.TOO_LONG, "none")]


@pytest.mark.parametrize("kafka", ["3.5", "3.9", "4"])
def test_it_keeps_a_transactions_offsets_with_their_epoch_and_metadata_until_its_commit(kafka):
    target = versions.CoreTarget(kafka)
    out = offsetmeta.exchange(target, "meta")
    assert out["add offsets"] == ["none"]
    assert out["txn commit"] == [(0, "none"), (1, "offset_metadata_too_large")]
    assert out["end txn"] == ["none"]
    assert out["fetched after the transaction"] == [
        (0, 11, 4, "in a transaction", "none"),
        (1, 9, 0, offsetmeta.TOO_LONG, "none"),
    ]


def test_it_refuses_metadata_past_the_brokers_own_bound_when_one_is_set():
    target = versions.CoreTarget("3.9")
    target.core.bounds = Bounds(offset_metadata_max_bytes=8)  # offset.metadata.max.bytes=8
    out = offsetmeta.exchange(target, "meta")
    assert out["commit v8"] == [(0, "offset_metadata_too_large"), (1, "offset_metadata_too_large")]
    assert out["fetched after v8"] == [(0, -1, -1, "", "none"), (1, -1, -1, "", "none")]
