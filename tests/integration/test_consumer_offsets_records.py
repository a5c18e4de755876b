"""What brokers write to `__consumer_offsets` decodes as Strait reads it: commits, group metadata, deletions."""

from __future__ import annotations

import time

from confluent_kafka import TopicPartition

from shared.kafka.factories import confluent_admin, confluent_consumer
from shared.kafka.partition_reader import read_to_end
from shared.localkafka import KafkaCluster
from shared.records.consumer_offsets import (
    GROUP_METADATA_KEY_TYPE,
    OffsetCommitKey,
    OtherKey,
    decode_key,
    decode_offset_commit_value,
    group_partition,
)
from tests.support.kafka_io import commit_offsets, commit_retrying, make_topic, produce


def test_commits_group_metadata_and_deletions_decode_from_the_partition_the_group_maps_to(
    cluster_a: KafkaCluster, unique: str
) -> None:
    props = cluster_a.client_properties()
    topic, group, members_group = f"co-{unique}", f"co-group-{unique}", f"co-members-{unique}"
    make_topic(props, topic, partitions=2)
    produce(props, topic, [(None, b"x")] * 50, partition=0)
    before_ms = int(time.time() * 1000)

    commit_offsets(props, group, [TopicPartition(topic, 0, 42, metadata="resume here")])
    member = confluent_consumer(props, **{"group.id": members_group, "auto.offset.reset": "earliest"})
    member.subscribe([topic])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.5)
    commit_retrying(member, [TopicPartition(topic, 1, 0)])
    member.close()

    # The harness brokers run with 10 offsets partitions (Kafka's default is 50): the group's place follows the count.
    count = len(
        confluent_admin(props).list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions
    )
    records = read_to_end(props, "__consumer_offsets", partition=group_partition(group, count))
    commits = [
        (decode_key(r.key), decode_offset_commit_value(r.value))
        for r in records
        if r.key and r.value and decode_key(r.key) == OffsetCommitKey(group, topic, 0)
    ]
    assert len(commits) == 1, records
    value = commits[0][1]
    # confluent-kafka sends the metadata with its C string's terminating NUL, and the broker keeps what it got.
    assert (value.offset, value.metadata.rstrip("\x00")) == (42, "resume here")
    assert before_ms - 5000 <= value.commit_timestamp_ms <= int(time.time() * 1000) + 5000

    member_records = read_to_end(props, "__consumer_offsets", partition=group_partition(members_group, count))
    keys = [decode_key(r.key) for r in member_records if r.key]
    assert OtherKey(GROUP_METADATA_KEY_TYPE, members_group) in keys
    assert OffsetCommitKey(members_group, topic, 1) in keys

    admin = confluent_admin(props)  # kept: a collected admin client never completes its futures
    admin.delete_consumer_groups([group], request_timeout=30)[group].result(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        tail = [
            r
            for r in read_to_end(props, "__consumer_offsets", partition=group_partition(group, count))
            if r.key and decode_key(r.key) == OffsetCommitKey(group, topic, 0)
        ]
        if tail[-1].value is None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert tail[-1].value is None, "deleting the group writes a tombstone for its offset"
