"""Read every instance's latest status from the compacted status topic (for `strait status` and the translator)."""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from shared.control.codec import decode_status
from shared.control.events import ServiceStatus
from shared.control.topic_names import STATUS_READER_GROUP, STATUS_TOPIC
from shared.errors import CodecError
from shared.kafka.partition_reader import read_to_end

_log = structlog.get_logger(__name__)


def read_statuses(props: Mapping[str, str], *, timeout_s: float = 10) -> dict[str, ServiceStatus]:
    """instance -> its latest status; empty if the topic does not exist yet.

    A record that is no status a reader can use is skipped with a warning: its instance keeps the status it had.
    Raises KafkaOperationError when the topic cannot be looked up; a read cut short by `timeout_s` gives what it has.
    """
    statuses: dict[str, ServiceStatus] = {}
    for record in read_to_end(props, STATUS_TOPIC, group_id=STATUS_READER_GROUP, timeout_s=timeout_s, complete=False):
        if record.value is None:
            if record.key is not None:  # a tombstone: that instance is gone
                statuses.pop(record.key.decode(errors="replace"), None)
            continue
        try:
            status = decode_status(record.value)
        except CodecError as exc:
            # the name every control-topic reader logs a skipped record under (operators' alerts match it)
            _log.warning("control_event_skipped", topic=STATUS_TOPIC, offset=record.offset, reason=str(exc))
            continue
        statuses[status.instance] = status
    return statuses
