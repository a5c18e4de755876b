"""The driver's synchronous link to the control, status and DR topics on each target cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import structlog

from shared.control import (
    CONTROL_TOPIC,
    STATUS_TOPIC,
    MirrorHandover,
    ServiceStatus,
    TopicsChanged,
    decode_event,
    encode_event,
)
from shared.control.channel import event_key
from shared.control.topic_names import CONTROL_READER_GROUP, COORDINATION_TOPICS
from shared.dr.records import FlowDrState
from shared.dr.state_watch import DrStateReader
from shared.errors import KafkaOperationError
from shared.kafka.follow import FollowedRecord
from shared.kafka.partition_reader import PartitionReader
from shared.kafka.record_writer import RawRecord, RecordWriter
from shared.kafka.topic_admin import TopicAdmin
from shared.kafka.topics import ROLLED_COMPACTED

_log = structlog.get_logger(__name__)
END_OFFSET_TIMEOUT_S = 10


class ControlReader(Protocol):
    """What the link reads the control topic with (a PartitionReader; a fake in unit tests)."""

    read_error: str | None

    def read(self, *, max_records: int = ..., timeout_s: float = ...) -> list[FollowedRecord]: ...

    def end_offset(self, timeout_s: float) -> int: ...

    def close(self) -> None: ...


class ControlWriter(Protocol):
    """What the link writes control events and status with (a RecordWriter; a fake in unit tests)."""

    def write(
        self, topic: str, records: Sequence[RawRecord], *, partition: int = ..., timeout_s: float = ...
    ) -> list[int]: ...

    def close(self, timeout_s: float = ...) -> None: ...


class DrStates(Protocol):
    """What the link reads the flows' DR states with (a DrStateReader; a fake in unit tests)."""

    read_error: str | None

    def poll(self) -> None: ...

    def state(self, flow: str) -> FlowDrState | None: ...

    def close(self) -> None: ...


class ControlLink:
    """Publishes status, notices `topics-changed` events and follows the DR state of the flows of one target."""

    def __init__(
        self, reader: ControlReader, writer: ControlWriter, flows: set[str], dr_states: DrStates | None = None
    ) -> None:
        self.flows = flows
        self._reader = reader
        self._writer = writer
        self._dr_states = dr_states
        self.read_error: str | None = None  # what failed in the last `topics_changed` call, if anything

    @classmethod
    def open(
        cls,
        props: Mapping[str, str],
        flows: set[str],
        *,
        replication_factor: int,
        cluster: str = "target",
    ) -> ControlLink:
        """Make sure the control, status and DR topics exist, then link to them, reading control events from now on
        and every DR state written so far (a flow failed over while no driver ran must not start copying again).

        `cluster` is the target's alias, for error messages.
        """
        admin = TopicAdmin(cluster, props, timeout_s=30)
        for topic in COORDINATION_TOPICS:
            admin.ensure_internal_topic(topic, replication_factor=replication_factor, configs=ROLLED_COMPACTED)
        writer = RecordWriter(cluster, props, **{"linger.ms": 0})
        reader = PartitionReader(props, CONTROL_TOPIC, group_id=CONTROL_READER_GROUP, from_end=True)
        dr_states = DrStateReader(props)
        dr_states.load()
        return cls(reader, writer, flows, dr_states)

    def dr_state(self, flow: str) -> FlowDrState | None:
        """`flow`'s DR state as last read (None: never failed over); reads what arrived since first."""
        if self._dr_states is None:
            return None
        self._dr_states.poll()
        return self._dr_states.state(flow)

    @property
    def dr_read_error(self) -> str | None:
        return None if self._dr_states is None else self._dr_states.read_error

    def topics_changed(self) -> bool:
        """True if a `topics-changed` event for one of our flows arrived since the last call (non-blocking).

        Also True after a read error, kept in `read_error` until a call reads cleanly: an event may have been
        missed, and looking at the topics again is cheap.
        """
        changed = False
        for record in self._reader.read(max_records=100):
            event = decode_event(record.value, topic=CONTROL_TOPIC, offset=record.offset)
            if isinstance(event, TopicsChanged) and event.flow in self.flows:
                changed = True
        self.read_error = self._reader.read_error
        return changed or self.read_error is not None

    def control_end_offset(self) -> int:
        """Where a task starts reading the control topic: any hand-over request for it comes after this."""
        return self._reader.end_offset(END_OFFSET_TIMEOUT_S)

    def request_handover(self, flow: str, tasks: list[tuple[int, int]], *, timeout_s: float = 10) -> None:
        """Ask the running tasks (slot, generation) of `flow` to commit and return.

        Raises KafkaOperationError when the target did not acknowledge the request within `timeout_s`.
        """
        event = MirrorHandover(flow=flow, tasks=tuple(tasks))
        try:
            self._writer.write(CONTROL_TOPIC, [(event_key(event), encode_event(event))], timeout_s=timeout_s)
        except KafkaOperationError as exc:
            # Not known to be written: the driver asks again next round (a late duplicate names no live task).
            raise KafkaOperationError(
                f"hand-over request for {flow} not written: {exc}",
                operation="request hand-over",
                retriable=exc.retriable,
            ) from exc

    def publish_status(self, status: ServiceStatus, *, timeout_s: float = 10) -> None:
        """Send a status record, waiting up to `timeout_s` so a final status survives process exit; raises
        KafkaOperationError if the target did not acknowledge it (the status publisher logs it, best effort)."""
        self._writer.write(STATUS_TOPIC, [(event_key(status), encode_event(status))], timeout_s=timeout_s)

    def close(self, *, timeout_s: float = 10) -> None:
        """Flush and close both clients (what the target has not acknowledged by then is dropped: status only)."""
        self._writer.close(timeout_s)
        self._reader.close()
        if self._dr_states is not None:
            self._dr_states.close()
