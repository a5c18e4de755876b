"""Leader epochs for fetching (KIP-320): the requests aiokafka lacks, or sends without epochs.

A consumer that fetches with the partition's current leader epoch is refused by a stale leader
(FENCED_LEADER_EPOCH) instead of being served a log that is about to be truncated; after a leader change it asks
the new leader where the epoch of the last records it fetched ends (OffsetForLeaderEpoch): an end before its
position means the log was truncated under it (an unclean election), and it goes back to that end, the first
offset known to diverge, as Kafka's Java consumer does.

aiokafka's metadata stops at v5 (no leader epochs) and its Fetch builder always sends -1 as the epoch, so the
three requests are declared here with aiokafka's protocol types and sent through its client.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import Array, Boolean, Int16, Int32, Int64, Schema, String
from aiokafka.structs import TopicPartition

from shared.kafka.factories import aio_client
from shared.kafka.fetch_response import ViewFetchRequest_v11
from shared.partition_key import PartitionKey

NO_EPOCH = -1


class MetadataResponse_v7(Response):  # type: ignore[misc]  # (Kafka's names, as aiokafka spells them)
    API_KEY = 3
    API_VERSION = 7
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("brokers", Array(("node_id", Int32), ("host", String("utf-8")), ("port", Int32), ("rack", String("utf-8")))),
        ("cluster_id", String("utf-8")),
        ("controller_id", Int32),
        (
            "topics",
            Array(
                ("error_code", Int16),
                ("name", String("utf-8")),
                ("is_internal", Boolean),
                (
                    "partitions",
                    Array(
                        ("error_code", Int16),
                        ("partition_index", Int32),
                        ("leader_id", Int32),
                        ("leader_epoch", Int32),
                        ("replica_nodes", Array(Int32)),
                        ("isr_nodes", Array(Int32)),
                        ("offline_replicas", Array(Int32)),
                    ),
                ),
            ),
        ),
    )


class MetadataRequest_v7(RequestStruct):  # type: ignore[misc]
    API_KEY = 3
    API_VERSION = 7
    RESPONSE_TYPE = MetadataResponse_v7
    SCHEMA = Schema(("topics", Array(String("utf-8"))), ("allow_auto_topic_creation", Boolean))


class LeaderEpochsRequest(Request[MetadataRequest_v7]):  # type: ignore[misc]
    """Metadata v7 for `topics`, never creating one: each partition's leader and its epoch."""

    API_KEY = 3

    def __init__(self, topics: list[str]) -> None:
        self._topics = topics

    def build(self, request_struct_class: type[MetadataRequest_v7]) -> MetadataRequest_v7:
        return request_struct_class(self._topics, False)


def leader_epochs(response: MetadataResponse_v7) -> dict[PartitionKey, int]:
    """The current leader epoch of every partition the answer names without an error."""
    return {
        (topic[1], part[1]): part[3] for topic in response.topics if not topic[0] for part in topic[3] if not part[0]
    }


class EpochFetchRequest(Request[ViewFetchRequest_v11]):  # type: ignore[misc]
    """Fetch v11 carrying each partition's current leader epoch (-1: not known), in a fetch session or not; the
    answer's records are views of the response (`fetch_response`)."""

    API_KEY = 1

    def __init__(
        self,
        max_wait_ms: int,
        max_bytes: int,
        isolation_level: int,
        partitions: Mapping[PartitionKey, tuple[int, int, int]],
        *,
        session: tuple[int, int] = (0, -1),
        forgotten: Sequence[PartitionKey] = (),
    ) -> None:
        """`partitions`: (topic, partition) -> (fetch offset, current leader epoch, max bytes); `session`: (id,
        epoch) of a fetch session (KIP-227; the default (0, -1) is none); `forgotten`: partitions it drops."""
        self._max_wait_ms, self._max_bytes, self._isolation = max_wait_ms, max_bytes, isolation_level
        self._partitions, self._session, self._forgotten = partitions, session, forgotten

    def build(self, request_struct_class: type[ViewFetchRequest_v11]) -> ViewFetchRequest_v11:
        by_topic: dict[str, list[tuple[int, int, int, int, int]]] = {}
        for (topic, partition), (offset, epoch, max_bytes) in self._partitions.items():
            by_topic.setdefault(topic, []).append((partition, epoch, offset, -1, max_bytes))
        forgotten: dict[str, list[int]] = {}
        for topic, partition in self._forgotten:
            forgotten.setdefault(topic, []).append(partition)
        # replica -1 (a consumer), min 1 byte, no rack
        session_id, session_epoch = self._session
        return request_struct_class(
            -1,
            self._max_wait_ms,
            1,
            self._max_bytes,
            self._isolation,
            session_id,
            session_epoch,
            list(by_topic.items()),
            list(forgotten.items()),
            "",
        )


class OffsetForLeaderEpochResponse_v3(Response):  # type: ignore[misc]
    API_KEY = 23
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "topics",
            Array(
                ("topic", String("utf-8")),
                (
                    "partitions",
                    Array(("error_code", Int16), ("partition", Int32), ("leader_epoch", Int32), ("end_offset", Int64)),
                ),
            ),
        ),
    )


class OffsetForLeaderEpochRequest_v3(RequestStruct):  # type: ignore[misc]
    API_KEY = 23
    API_VERSION = 3
    RESPONSE_TYPE = OffsetForLeaderEpochResponse_v3
    SCHEMA = Schema(
        ("replica_id", Int32),
        (
            "topics",
            Array(
                ("topic", String("utf-8")),
                ("partitions", Array(("partition", Int32), ("current_leader_epoch", Int32), ("leader_epoch", Int32))),
            ),
        ),
    )


class EpochEndsRequest(Request[OffsetForLeaderEpochRequest_v3]):  # type: ignore[misc]
    """OffsetForLeaderEpoch as a consumer asks it: where does each partition's `epoch` end in the leader's log
    now? `asked`: (topic, partition) -> (current leader epoch, or -1 not to be fenced; epoch)."""

    API_KEY = 23

    def __init__(self, asked: Mapping[PartitionKey, tuple[int, int]]) -> None:
        self._asked = asked

    def build(self, request_struct_class: type[OffsetForLeaderEpochRequest_v3]) -> OffsetForLeaderEpochRequest_v3:
        by_topic: dict[str, list[tuple[int, int, int]]] = {}
        for (topic, partition), (current_epoch, epoch) in self._asked.items():
            by_topic.setdefault(topic, []).append((partition, current_epoch, epoch))
        return request_struct_class(-1, list(by_topic.items()))


def epoch_end_answers(response: OffsetForLeaderEpochResponse_v3) -> dict[PartitionKey, tuple[int, int]]:
    """(error code, end offset) of each partition asked about."""
    return {
        (topic, int(partition)): (int(error), int(end_offset))
        for topic, partitions in response.topics
        for error, partition, _epoch, end_offset in partitions
    }


async def epoch_ends(props: Mapping[str, str], epochs: Mapping[PartitionKey, int]) -> dict[PartitionKey, int]:
    """Where each partition's leader says the given epoch ends now: one request per leader; -1 when the leader
    no longer knows the epoch. Partitions whose leader is unknown or answers with an error are left out (nothing
    is known about them: ask again)."""
    client = aio_client(props)
    try:
        await client.bootstrap()
        await client.set_topics(sorted({topic for topic, _ in epochs}))
        by_leader: dict[int, dict[PartitionKey, tuple[int, int]]] = {}
        for key, epoch in epochs.items():
            leader = client.cluster.leader_for_partition(TopicPartition(*key))
            if leader is not None and leader >= 0:
                by_leader.setdefault(leader, {})[key] = (NO_EPOCH, epoch)  # not fenced: no current epoch known
        ends: dict[PartitionKey, int] = {}
        for leader, asked in by_leader.items():
            response = await client.send(leader, EpochEndsRequest(asked))
            answers = epoch_end_answers(response).items()
            ends |= {key: end for key, (error, end) in answers if not error}
        return ends
    finally:
        await client.close()
