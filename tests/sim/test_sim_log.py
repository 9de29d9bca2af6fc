import pickle

from playground.sim.log import ABORT, COMMIT, READ_COMMITTED, READ_UNCOMMITTED, Batch, PartitionLog, Txn


def replicated(log):
    log.advance_high_watermark(log.log_end_offset)
    return log


def test_it_gives_each_record_and_each_marker_one_offset():
    log = PartitionLog("orders", 0)
    assert log.append(7, 0, 0, True, ("a", "b")).base_offset == 0
    assert log.append_marker(7, 0, COMMIT, 0).base_offset == 2
    assert log.log_end_offset == 3


def test_it_keeps_the_lso_at_the_first_offset_of_an_open_transaction():
    log = replicated(PartitionLog("orders", 0))
    log.append(1, 0, 0, False, ("plain-before",))
    log.append(7, 0, 0, True, ("txn",))
    log.append(1, 0, 1, False, ("plain-after",))
    replicated(log)
    assert (log.last_stable_offset, log.high_watermark, log.log_end_offset) == (1, 3, 3)


def test_it_holds_the_lso_until_the_marker_is_below_the_high_watermark():
    log = replicated(PartitionLog("orders", 0))
    log.append(7, 0, 0, True, ("txn",))
    replicated(log)
    log.append_marker(7, 0, COMMIT, 0)
    assert log.last_stable_offset == 0  # marker written, not yet replicated
    replicated(log)
    assert log.last_stable_offset == 2


def test_it_rejects_an_older_epoch_with_invalid_producer_epoch():
    log = PartitionLog("orders", 0)
    log.append(7, 0, 0, True, ("a",))
    log.append_marker(7, 1, ABORT, 0)  # the coordinator fenced epoch 0
    assert log.append(7, 0, 1, True, ("zombie",)).error == "INVALID_PRODUCER_EPOCH"


def test_it_rejects_a_marker_from_an_older_coordinator():
    log = PartitionLog("orders", 0)
    log.append(7, 0, 0, True, ("a",))
    log.append_marker(7, 0, COMMIT, 5)
    assert log.append_marker(7, 0, COMMIT, 4).error == "TRANSACTION_COORDINATOR_FENCED"


def test_it_rejects_a_sequence_gap_and_returns_the_original_offsets_for_a_retry():
    log = PartitionLog("orders", 0)
    first = log.append(9, 0, 0, False, ("a", "b"))
    assert log.append(9, 0, 5, False, ("c",)).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    retry = log.append(9, 0, 0, False, ("a", "b"))
    assert retry.duplicate and (retry.base_offset, retry.last_offset) == (first.base_offset, first.last_offset)
    assert log.log_end_offset == 2


def test_it_takes_only_sequence_zero_first_in_an_epoch_a_tv2_marker_bumped():
    # ProducerAppendInfo.checkSequence: the marker leaves an entry of epoch 1 with no batch, whose last sequence is
    # NO_SEQUENCE, so the next batch must be 0; a later batch sent while batch 0 was refused (franz-go's TestTxnEtl
    # on Kafka 4) is out of order, and batch 0 retried then lands first.
    log = PartitionLog("orders", 0)
    log.append(7, 0, 0, True, ("a", "b"))
    log.append_marker(7, 1, COMMIT, 0)
    assert log.append(7, 1, 410, True, ("late",)).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    assert log.append(7, 1, 0, True, ("first",)).base_offset == 3


def test_it_takes_any_sequence_from_a_producer_it_has_no_epoch_of():
    log = PartitionLog("orders", 0)
    assert log.append(7, 4, 410, True, ("a",)).error is None


def test_it_forgets_batches_older_than_the_last_five_for_deduplication():
    log = PartitionLog("orders", 0)
    for i in range(6):
        log.append(9, 0, i, False, (f"v{i}",))
    assert log.append(9, 0, 5, False, ("v5",)).duplicate
    assert log.append(9, 0, 0, False, ("v0",)).error == "OUT_OF_ORDER_SEQUENCE_NUMBER"


def test_it_refuses_a_plain_write_from_a_producer_id_with_an_open_transaction():
    log = PartitionLog("orders", 0)
    log.append(7, 0, 0, True, ("txn",))
    assert log.append(7, 0, 1, False, ("plain",)).error == "INVALID_TXN_STATE"


def test_it_asks_the_verifier_only_for_the_first_batch_of_a_transaction():
    log = PartitionLog("orders", 0)
    asked = []
    verify = lambda pid, epoch: asked.append((pid, epoch)) or None  # noqa: E731
    log.append(7, 0, 0, True, ("a",), verify=verify)
    log.append(7, 0, 1, True, ("b",), verify=verify)
    assert asked == [(7, 0)]
    assert log.append(8, 3, 0, True, ("x",), verify=lambda pid, e: "INVALID_PRODUCER_EPOCH").error


def test_it_indexes_aborted_transactions_and_read_committed_skips_them():
    log = PartitionLog("orders", 0)
    log.append(7, 0, 0, True, ("aborted-1",))
    log.append(1, 0, 0, False, ("plain",))
    log.append(8, 0, 0, True, ("committed",))
    log.append(7, 0, 1, True, ("aborted-2",))
    log.append_marker(7, 0, ABORT, 0)
    log.append_marker(8, 0, COMMIT, 0)
    replicated(log)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted] == [(7, 0, 4)]
    rc, pos = log.fetch(0, READ_COMMITTED)
    assert [r[2] for r in rc] == ["plain", "committed"] and pos == 6
    ru, _ = log.fetch(0, READ_UNCOMMITTED)
    assert [r[2] for r in ru] == ["aborted-1", "plain", "committed", "aborted-2"]


def test_it_moves_a_read_committed_position_past_markers_and_aborted_data():
    log = PartitionLog("orders", 0)
    log.append(7, 0, 0, True, ("x",))
    log.append_marker(7, 0, ABORT, 0)
    replicated(log)
    records, position = log.fetch(0, READ_COMMITTED)
    assert records == [] and position == 2


def test_it_stops_read_uncommitted_at_the_high_watermark_and_honours_max_records():
    log = PartitionLog("orders", 0)
    log.append(1, 0, 0, False, ("a", "b", "c"))
    log.advance_high_watermark(2)
    records, position = log.fetch(0, READ_UNCOMMITTED)
    assert [r[2] for r in records] == ["a", "b"] and position == 2
    records, position = log.fetch(0, READ_UNCOMMITTED, max_records=1)
    assert [r[2] for r in records] == ["a"] and position == 1


def test_it_fetches_from_the_middle_of_a_batch():
    log = replicated(PartitionLog("orders", 0))
    log.append(-1, -1, -1, False, ("a", "b", "c"))
    replicated(log)
    records, position = log.fetch(1, READ_UNCOMMITTED)
    assert [(r[0], r[2]) for r in records] == [(1, "b"), (2, "c")] and position == 3


def test_it_writes_a_marker_even_without_an_open_transaction():
    log = PartitionLog("orders", 0)
    assert log.append_marker(7, 1, ABORT, 0).error is None
    assert log.aborted == []  # no data here: nothing to index
    assert log.append(7, 0, 0, True, ("late",)).error == "INVALID_PRODUCER_EPOCH"


def test_it_tells_the_fate_of_every_entry():
    log = PartitionLog("orders", 0)
    log.append(7, 0, 0, True, ("t",))
    log.append(-1, -1, -1, False, ("p",))
    fates = [b.fate() for b in log.batches]
    assert fates == ["open", "plain"]
    log.append_marker(7, 0, ABORT, 0)
    assert [b.fate() for b in log.batches] == ["aborted", "plain", "marker"]


def test_it_does_not_let_an_earlier_empty_abort_marker_end_a_later_aborted_transaction():
    log = PartitionLog("orders", 0)
    log.append_marker(7, 1, ABORT, 0)  # a fence abort with no data here
    log.append(7, 4, 0, True, ("aborted",))
    log.append_marker(7, 4, ABORT, 0)
    replicated(log)
    records, position = log.fetch(0, READ_COMMITTED)
    assert records == [] and position == 3


def test_it_freezes_and_thaws_batches_with_every_slot_and_the_transaction_they_share():
    txn = Txn(producer_id=7, first_offset=3)
    txn.last_offset, txn.outcome, txn.stable = 5, COMMIT, True
    first = Batch(3, 7, 1, 0, True, ("k",), ("a",), 100, txn=txn)
    second = Batch(4, 7, 1, 1, True, None, ("b",), 101, txn=txn)
    marker = Batch(5, 7, 1, -1, True, None, (), 102, control=COMMIT, coordinator_epoch=2)
    thawed = pickle.loads(pickle.dumps([first, second, marker]))
    for before, after in zip([first, second, marker], thawed):
        assert [getattr(after, k) for k in Batch.__slots__ if k != "txn"] == [
            getattr(before, k) for k in Batch.__slots__ if k != "txn"
        ]
    assert thawed[0].txn is thawed[1].txn and thawed[2].txn is None
    assert [getattr(thawed[0].txn, k) for k in Txn.__slots__] == [getattr(txn, k) for k in Txn.__slots__]
