"""Read every instance's latest status from the compacted status topic (for `strait status` and the translator)."""

from __future__ import annotations

from collections.abc import Mapping

from shared.control.codec import decode_event
from shared.control.events import ServiceStatus
from shared.control.topic_names import STATUS_READER_GROUP, STATUS_TOPIC
from shared.kafka.partition_reader import read_to_end


def read_statuses(props: Mapping[str, str], *, timeout_s: float = 10) -> dict[str, ServiceStatus]:
    """instance -> its latest status; empty if the topic does not exist yet.

    Raises KafkaOperationError when the topic cannot be looked up; a read cut short by `timeout_s` gives what it has.
    """
    statuses: dict[str, ServiceStatus] = {}
    for record in read_to_end(props, STATUS_TOPIC, group_id=STATUS_READER_GROUP, timeout_s=timeout_s, complete=False):
        event = decode_event(record.value, topic=STATUS_TOPIC, offset=record.offset)
        if isinstance(event, ServiceStatus):
            statuses[event.instance] = event
        elif record.value is None and record.key is not None:  # a tombstone: that instance is gone
            statuses.pop(record.key.decode(errors="replace"), None)
    return statuses
