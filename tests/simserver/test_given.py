"""What a connected consumer's application was given (simserver/given.py): records fetched count until a rebalance
has the group fetch them again."""

from __future__ import annotations

from playground.simserver.given import Given


def test_it_counts_every_record_a_fetch_answered():
    given = Given()
    given.add("orders-0", [0, 1, 2], tag=1)
    given.add("orders-0", [4, 5], tag=1)  # 3: a transaction's marker
    assert given.total == 5 and list(given.recent["orders-0"]) == [0, 1, 2, 4, 5]


def test_it_takes_back_what_was_fetched_past_where_the_group_starts_again():
    given = Given()
    given.add("orders-0", list(range(10)), tag=1)
    assert given.take_back("orders-0", 4) == set(range(4, 10))
    assert given.total == 4 and list(given.recent["orders-0"]) == [0, 1, 2, 3]
    assert given.take_back("orders-0", 4) == set() and given.total == 4


def test_it_takes_back_only_what_was_fetched_before_the_member_s_last_sync_group():
    given = Given()
    given.add("orders-0", [0, 1, 2], tag=1)
    given.add("orders-0", [3, 4], tag=2)
    assert given.take_back("orders-0", 1, before_tag=2) == {1, 2}
    assert given.total == 3 and list(given.recent["orders-0"]) == [0, 3, 4]


def test_a_seek_back_without_a_rebalance_is_a_second_delivery():
    given = Given()
    given.add("orders-0", [0, 1, 2], tag=1)
    given.add("orders-0", [1, 2], tag=1)
    assert given.total == 5
