"""The driver's control link: topics-changed events for its flows, read errors that force a look, and writes that
say when the target did not take them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from services.data_mirror.control_link import ControlLink
from shared.control import (
    CONTROL_TOPIC,
    STATUS_TOPIC,
    MirrorHandover,
    RemoteTopic,
    ServiceStatus,
    TopicsChanged,
    decode_event,
    encode_event,
)
from shared.errors import KafkaOperationError
from shared.kafka.follow import FollowedRecord
from shared.kafka.record_writer import RawRecord


class _Reader:
    """The control topic as a PartitionReader shows it: records appended to `log`, and a failed fetch now and then."""

    def __init__(self) -> None:
        self.log: list[bytes] = []
        self.position = 0
        self.fail_next: str | None = None
        self.read_error: str | None = None

    def read(self, *, max_records: int = 5000, timeout_s: float = 0.0) -> list[FollowedRecord]:
        self.read_error, self.fail_next = self.fail_next, None
        values = self.log[self.position : self.position + max_records]
        start, self.position = self.position, self.position + len(values)
        return [FollowedRecord(start + i, b"k", value, 0, CONTROL_TOPIC) for i, value in enumerate(values)]

    def end_offset(self, timeout_s: float) -> int:
        return len(self.log)

    def close(self) -> None:
        pass


class _Writer:
    """Keeps what it is given per topic, or raises `failure` instead."""

    def __init__(self) -> None:
        self.written: dict[str, list[RawRecord]] = {}
        self.failure: KafkaOperationError | None = None
        self.closed = False

    def write(
        self, topic: str, records: Sequence[RawRecord], *, partition: int = 0, timeout_s: float = 30
    ) -> list[int]:
        if self.failure is not None:
            raise self.failure
        log = self.written.setdefault(topic, [])
        log.extend(records)
        return list(range(len(log) - len(records), len(log)))

    def close(self, timeout_s: float = 10) -> None:
        self.closed = True


def _link() -> tuple[ControlLink, _Reader, _Writer]:
    reader, writer = _Reader(), _Writer()
    return ControlLink(reader, writer, flows={"A->B"}), reader, writer


def _changed(flow: str) -> bytes:
    return encode_event(
        TopicsChanged(flow=flow, topics=(RemoteTopic(source_topic="t", remote_topic="A.t", partitions=1),))
    )


def _not_acknowledged() -> KafkaOperationError:
    return KafkaOperationError(
        "cluster B: produce to strait.control.internal failed: 1 records not acknowledged in 10s", operation="produce"
    )


def test_only_events_of_its_own_flows_count() -> None:
    link, reader, _ = _link()
    reader.log.append(_changed("C->B"))
    assert link.topics_changed() is False
    reader.log.append(_changed("A->B"))
    assert link.topics_changed() is True
    assert link.topics_changed() is False
    assert link.read_error is None


def test_a_read_error_forces_a_look_and_is_kept_until_a_clean_read() -> None:
    link, reader, _ = _link()
    reader.fail_next = f"reading {CONTROL_TOPIC}: TOPIC_AUTHORIZATION_FAILED: not allowed"
    assert link.topics_changed() is True  # an event may have been missed
    assert link.read_error is not None
    assert "TOPIC_AUTHORIZATION_FAILED" in link.read_error
    assert CONTROL_TOPIC in link.read_error
    assert link.topics_changed() is False
    assert link.read_error is None


def test_a_task_starts_reading_the_control_topic_at_its_end() -> None:
    link, reader, _ = _link()
    reader.log += [_changed("A->B"), _changed("C->B")]
    assert link.control_end_offset() == 2


def test_a_handover_request_names_the_flow_and_its_tasks() -> None:
    link, _, writer = _link()
    link.request_handover("A->B", [(0, 3), (1, 4)])
    [(key, value)] = writer.written[CONTROL_TOPIC]
    event = decode_event(value)
    assert isinstance(event, MirrorHandover)
    assert (event.flow, event.tasks) == ("A->B", ((0, 3), (1, 4)))
    assert key == b"mirror-handover:A->B"


def test_a_handover_request_the_target_does_not_acknowledge_raises() -> None:
    link, _, writer = _link()
    writer.failure = _not_acknowledged()
    with pytest.raises(
        KafkaOperationError, match=r"hand-over request for A->B not written: cluster B: .* not acknowledged"
    ):
        link.request_handover("A->B", [(0, 3)], timeout_s=1)


def test_a_status_the_target_does_not_acknowledge_raises_for_the_status_publisher_to_log() -> None:
    link, _, writer = _link()
    status = ServiceStatus(flow="A->B", service="data-mirror", instance="i/A->B", state="running")
    link.publish_status(status)
    assert writer.written[STATUS_TOPIC] == [(b"i/A->B", encode_event(status))]
    writer.failure = _not_acknowledged()
    with pytest.raises(KafkaOperationError, match="not acknowledged"):
        link.publish_status(status, timeout_s=1)
    link.close()
    assert writer.closed
