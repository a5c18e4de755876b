"""The driver's control link: topics-changed events for its flows, and read errors that force a look."""

from __future__ import annotations

from confluent_kafka import KafkaError, TopicPartition

from services.data_mirror.control_link import ControlLink
from shared.control import CONTROL_TOPIC, RemoteTopic, TopicsChanged, encode_event
from tests.unit.services.data_mirror.fake_kafka import FakeCluster, FakeConsumer, FakeMessage, Record


def _link(cluster: FakeCluster) -> tuple[ControlLink, FakeConsumer]:
    consumer = FakeConsumer(cluster)
    consumer.assign([TopicPartition(CONTROL_TOPIC, 0, 0)])
    return ControlLink(producer=None, consumer=consumer, flows={"A->B"}), consumer


def _changed(flow: str) -> Record:
    event = TopicsChanged(flow=flow, topics=(RemoteTopic(source_topic="t", remote_topic="A.t", partitions=1),))
    return Record(key=b"k", value=encode_event(event), timestamp=0)


def test_only_events_of_its_own_flows_count() -> None:
    cluster = FakeCluster()
    link, _ = _link(cluster)
    cluster.log(CONTROL_TOPIC, 0).append(_changed("C->B"))
    assert link.topics_changed() is False
    cluster.log(CONTROL_TOPIC, 0).append(_changed("A->B"))
    assert link.topics_changed() is True
    assert link.topics_changed() is False
    assert link.read_error is None


def test_a_read_error_forces_a_look_and_is_kept_until_a_clean_read() -> None:
    cluster = FakeCluster()
    link, consumer = _link(cluster)
    error = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "not allowed to read strait.control.internal")
    consumer.errors = [FakeMessage(CONTROL_TOPIC, 0, -1, Record(None, None, 0), error=error)]
    assert link.topics_changed() is True  # an event may have been missed
    assert link.read_error is not None
    assert "TOPIC_AUTHORIZATION_FAILED" in link.read_error
    assert CONTROL_TOPIC in link.read_error
    assert link.topics_changed() is False
    assert link.read_error is None


def test_end_of_partition_is_no_error() -> None:
    cluster = FakeCluster()
    link, consumer = _link(cluster)
    consumer.errors = [
        FakeMessage(CONTROL_TOPIC, 0, 0, Record(None, None, 0), error=KafkaError(KafkaError._PARTITION_EOF))
    ]
    assert link.topics_changed() is False
    assert link.read_error is None
