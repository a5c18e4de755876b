"""Whether a flow may move anything now: its durable DR state, followed on its target by every service of the flow.

A service knows nothing until the topic was read to its end once, and moves nothing until then: a flow failed over
while the service was down must never be copied, checkpointed or synced again on its restart. A topic that does not
exist yet counts as read (no DR action ever ran: every flow is active).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from shared.config import FlowConfig
from shared.control.topic_names import DR_READER_GROUP, DR_TOPIC
from shared.dr.records import FlowDrState, decode_record
from shared.dr.store import DrView
from shared.kafka.follow import FollowedRecord, TopicFollower
from shared.kafka.partition_reader import PartitionReader

READ_TIMEOUT_S = 30


def _apply(view: DrView, records: Iterable[FollowedRecord]) -> None:
    for record in records:
        decoded = decode_record(record.value, offset=record.offset)
        if decoded is not None:
            view.apply(decoded)


def state_details(state: FlowDrState | None) -> dict[str, Any]:
    """What a status record says of a flow's DR state (nothing while it is active and never failed over)."""
    if state is None:
        return {}
    return {"dr": {"state": state.state, "since_ts": state.ts, "action": state.action, "report_id": state.report_id}}


class FlowStateWatch:
    """Follows one flow's DR state (asyncio: `run` in a task of the service)."""

    def __init__(self, flow: FlowConfig) -> None:
        self.flow = flow.name
        self._view = DrView()
        self._follower = TopicFollower(flow.target_consumer_props(), DR_TOPIC, lambda rs: _apply(self._view, rs))

    async def run(self) -> None:
        """Follow until cancelled (Kafka failures are retried)."""
        await self._follower.run()

    @property
    def state(self) -> FlowDrState | None:
        return self._view.states.get(self.flow)

    @property
    def known(self) -> bool:
        """True once the topic was read to its end (or found missing)."""
        return self._follower.caught_up

    @property
    def may_run(self) -> bool:
        """True when the flow's state is known and it is not failed over."""
        state = self.state
        return self.known and (state is None or not state.stopped)

    def details(self) -> dict[str, Any]:
        """For the status record: the DR state, or that it is not known yet."""
        if not self.known:
            return {"dr": {"state": "unknown", "note": f"{DR_TOPIC} not read yet: nothing moves until it is"}}
        return state_details(self.state)


class DrStateReader:
    """The DR states of the flows of one target cluster, for a blocking loop (data-mirror's driver)."""

    def __init__(self, props: Mapping[str, str]) -> None:
        self._view = DrView()
        self._reader = PartitionReader(props, DR_TOPIC, group_id=DR_READER_GROUP)
        self.read_error: str | None = None

    def load(self, timeout_s: float = READ_TIMEOUT_S) -> None:
        """Read everything written so far (raises when the target does not answer: nothing may start unknown)."""
        _apply(self._view, self._reader.read_to_current_end(timeout_s))

    def poll(self) -> None:
        """Take what arrived since (non-blocking); a failed read is kept in `read_error`."""
        records: Sequence[FollowedRecord] = self._reader.read(max_records=500)
        self.read_error = self._reader.read_error
        _apply(self._view, records)

    def state(self, flow: str) -> FlowDrState | None:
        return self._view.states.get(flow)

    def stopped(self, flow: str) -> bool:
        state = self.state(flow)
        return state is not None and state.stopped

    def close(self) -> None:
        self._reader.close()
