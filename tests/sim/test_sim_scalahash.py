"""The order Kafka 3.5's coordinator walks its Scala maps in (playground/sim/scalahash.py), as scala-library 2.13.10
printed it with kafka-clients 3.5.2's TopicPartition (tests/kafka/test_kafka_offset_meta.py asks jshell afresh)."""

from playground.sim.scalahash import java_string_hash, scala_order, topic_partition_hash

# topic, partitions -> the order of a mutable.HashMap holding partitions 0..n-1
PRINTED = {
    ("om35-1796682191767790590", 2): [1, 0],
    ("om35-1796682191767790590", 12): [9, 10, 7, 8, 11, 1, 2, 0, 5, 6, 3, 4],
    ("om35-1796682176685448230", 2): [0, 1],
    ("om35-1796682176685448230", 13): [12, 0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7],
    ("a", 5): [2, 1, 0, 4, 3],
    ("offset-meta", 12): [0, 4, 3, 2, 1, 8, 7, 6, 5, 11, 10, 9],
    ("zz-top-99", 13): [0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11],
}
GROUPS = ["om35-1796682191767790590-group", "om35-1796682176685448230-group", "om35-1796682161343450448-group"]
GROUPS += ["orders-group", "a-group", "offset-meta-group", "zz-top-99-group"]
GROUPS_PRINTED = [GROUPS[2], GROUPS[4], GROUPS[0], GROUPS[6], GROUPS[3], GROUPS[5], GROUPS[1]]


def test_it_walks_topic_partitions_as_a_scala_hash_map_does():
    for (topic, n), printed in PRINTED.items():
        tps = [f"{topic}-{p}" for p in range(n)]
        assert scala_order(tps, topic_partition_hash) == [f"{topic}-{p}" for p in printed], (topic, n)


def test_it_walks_group_ids_as_a_scala_hash_set_does():
    assert scala_order(GROUPS, java_string_hash) == GROUPS_PRINTED


def test_it_hashes_strings_as_java_does_over_utf16_units():
    assert java_string_hash("") == 0 and java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("é😀") == 1996812  # the emoji as its two surrogates (jshell printed it)
