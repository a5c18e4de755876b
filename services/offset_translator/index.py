"""The translator's in-memory index: checkpoints, offset syncs, statuses, heartbeats and topic names.

Feeds (see `feeds.py`) call the `on_*` methods with records in log order, on the event loop; the API reads
without I/O. Nothing is answered for a flow until its checkpoints and offset-syncs topics were read to
their end once (MM2's rule for offset syncs, applied to checkpoints too). A heartbeat or status stamped too far
ahead of the index's clock is counted (`shared/clock_skew.py`): the heartbeat is skipped, the status kept (the
status summary takes it as stale).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from services.offset_translator.checkpoint_index import CheckpointIndex
from services.offset_translator.errors import NotReadyError, UnknownClusterError, UnknownFlowError
from services.offset_translator.flows import FlowKey, ServedFlow
from services.offset_translator.status_index import StatusIndex
from shared.clock_skew import AheadLog, too_far_ahead
from shared.control.codec import decode_status
from shared.control.events import now_ms
from shared.dr.records import decode_record
from shared.dr.store import DrView
from shared.errors import CodecError
from shared.kafka.follow import FollowedRecord
from shared.offset_sync_store import OffsetSyncStore
from shared.records.checkpoint import Checkpoint
from shared.records.heartbeat import Heartbeat
from shared.records.progress import Progress, ProgressKey, decode_progress_record
from shared.records.reading import Decode, decoded
from shared.replication_policy import ReplicationPolicy

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class TopicSnapshot:
    """A cluster's topic names as last listed, and when (epoch ms)."""

    names: frozenset[str]
    listed_ms: int


class TranslatorIndex:
    """Everything the API answers from, for the served flows and the clusters they touch."""

    def __init__(
        self,
        flows: Iterable[ServedFlow],
        cluster_policies: Mapping[str, ReplicationPolicy],
        *,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.flows: dict[FlowKey, ServedFlow] = {flow.key: flow for flow in flows}
        self.cluster_policies = dict(cluster_policies)
        self.checkpoints = CheckpointIndex()
        self.syncs: dict[FlowKey, OffsetSyncStore] = {key: OffsetSyncStore() for key in self.flows}
        self.statuses = StatusIndex()
        self.records_read: Counter[str] = Counter()
        self.records_skipped: Counter[str] = Counter()
        self.records_ahead: Counter[str] = Counter()  # stamped too far ahead of `clock` (epoch ms)
        self._clock = clock
        self._ahead_log = AheadLog(_log)
        self._checkpoints_loaded: set[FlowKey] = set()
        self._topics: dict[str, TopicSnapshot] = {}
        # data-mirror's latest committed position per partition (what a failover now would leave behind), and
        # each target cluster's DR states and reports
        self.progress: dict[FlowKey, dict[tuple[str, int], Progress]] = {key: {} for key in self.flows}
        self.dr: dict[str, DrView] = {}

    # -- lookups ---------------------------------------------------------------------------------
    def now_ms(self) -> int:
        """The index's clock (epoch ms): the API's."""
        return self._clock()

    def cluster(self, alias: str) -> ReplicationPolicy:
        """The policy reading topic names on `alias`; UnknownClusterError if the config has no such cluster."""
        policy = self.cluster_policies.get(alias)
        if policy is None:
            known = ", ".join(sorted(self.cluster_policies))
            raise UnknownClusterError(f"unknown cluster '{alias}' (clusters: {known})")
        return policy

    def flow(self, source: str, target: str) -> ServedFlow:
        """The served flow source->target; 404-family errors name what is unknown."""
        self.cluster(source)
        self.cluster(target)
        flow = self.flows.get((source, target))
        if flow is None:
            served = ", ".join(f.name for f in self.flows.values()) or "none"
            raise UnknownFlowError(f"flow '{source}->{target}' is not served by this translator (served: {served})")
        return flow

    def checkpoints_loaded(self, flow: FlowKey) -> bool:
        """True once the flow's checkpoints topic was read to its end."""
        return flow in self._checkpoints_loaded

    def syncs_loaded(self, flow: FlowKey) -> bool:
        """True once the flow's offset-syncs topic was read to its end."""
        return self.syncs[flow].read_to_end

    def require_checkpoints(self, flow: ServedFlow) -> None:
        """NotReadyError unless the flow's checkpoints topic was read to its end."""
        if not self.checkpoints_loaded(flow.key):
            raise NotReadyError(f"still loading {flow.checkpoints_topic} on {flow.target}; retry shortly")

    def require_syncs(self, flow: ServedFlow) -> None:
        """NotReadyError unless the flow's offset-syncs topic was read to its end."""
        if not self.syncs_loaded(flow.key):
            raise NotReadyError(
                f"still loading {flow.offset_syncs_topic} on {flow.offset_syncs_cluster}; retry shortly"
            )

    @property
    def loaded(self) -> bool:
        """True when every served flow's checkpoints and offset syncs were read to their end once."""
        return all(self.checkpoints_loaded(key) and self.syncs_loaded(key) for key in self.flows)

    def loading(self) -> list[str]:
        """What is still being read for the first time, as "topic on cluster"."""
        pending = []
        for key, flow in self.flows.items():
            if not self.checkpoints_loaded(key):
                pending.append(f"{flow.checkpoints_topic} on {flow.target}")
            if not self.syncs_loaded(key):
                pending.append(f"{flow.offset_syncs_topic} on {flow.offset_syncs_cluster}")
        return pending

    def topics(self, cluster: str) -> TopicSnapshot | None:
        """The cluster's topic names as last listed, or None before the first listing."""
        return self._topics.get(cluster)

    # -- updates ---------------------------------------------------------------------------------
    def mark_checkpoints_loaded(self, flow: FlowKey) -> None:
        """The flow's checkpoints topic was read to its end: answer for it from now on."""
        self._checkpoints_loaded.add(flow)

    def mark_syncs_loaded(self, flow: FlowKey) -> None:
        """The flow's offset-syncs topic was read to its end: translate from now on."""
        self.syncs[flow].mark_read_to_end()

    def set_topics(self, cluster: str, names: Iterable[str], listed_ms: int) -> None:
        """Replace the cluster's topic names."""
        self._topics[cluster] = TopicSnapshot(frozenset(names), listed_ms)

    def on_checkpoint_records(self, flow: FlowKey, records: Sequence[FollowedRecord]) -> None:
        """Apply checkpoint records; undecodable ones are skipped and logged, as MM2's reader does."""
        skip = functools.partial(self._skip, "checkpoints")
        decode: Decode[Checkpoint] = lambda key, value, _: Checkpoint.decode(key, value)  # noqa: E731
        for record, checkpoint in decoded(records, decode, skip, on_tombstone=skip):
            self.checkpoints.apply(flow, checkpoint, record.timestamp_ms)
        self.records_read["checkpoints"] += len(records)

    def on_sync_records(self, flow: FlowKey, records: Sequence[FollowedRecord]) -> None:
        """Apply offset-sync records to the flow's OffsetSyncStore."""
        store = self.syncs[flow]
        skip = functools.partial(self._skip, "offset-syncs")
        for _ in decoded(
            records, lambda key, value, record: store.handle_record(key, value, record.headers), skip, on_tombstone=skip
        ):
            pass
        self.records_read["offset-syncs"] += len(records)

    def on_status_records(self, cluster: str, records: Sequence[FollowedRecord]) -> None:
        """Apply status records of one cluster; a tombstone forgets its instance, and a record that is no status
        a reader can use is skipped and counted (its instance keeps the status it had)."""
        for record in records:
            if record.value is None:
                if record.key is not None:
                    self.statuses.remove_instance(cluster, record.key.decode(errors="replace"))
                continue
            try:
                status = decode_status(record.value)
            except CodecError as exc:  # logged as every control-topic reader logs a skipped record
                self.records_skipped["status"] += 1
                _log.warning("control_event_skipped", topic=record.topic, offset=record.offset, reason=str(exc))
                continue
            self._ahead("status", status.ts, instance=status.instance)
            self.statuses.apply_status(cluster, status)
        self.records_read["status"] += len(records)

    def on_heartbeat_records(self, flow: FlowKey, records: Sequence[FollowedRecord]) -> None:
        """Remember the newest mirrored heartbeat of the flow; one stamped too far ahead is never the newest."""
        skip = functools.partial(self._skip, "heartbeats")
        decode: Decode[Heartbeat] = lambda key, value, _: Heartbeat.decode(key, value)  # noqa: E731
        for _, heartbeat in decoded(records, decode, skip, on_tombstone=skip):
            if not self._ahead("heartbeats", heartbeat.timestamp_ms, flow=self.flows[flow].name):
                self.statuses.apply_heartbeat(flow, heartbeat.timestamp_ms)
        self.records_read["heartbeats"] += len(records)

    def on_progress_records(self, flow: FlowKey, records: Sequence[FollowedRecord]) -> None:
        """Keep each partition's latest progress of the flow (the topic may hold other flows' from the same source)."""
        name = self.flows[flow].name
        mine = self.progress[flow]
        for record in records:
            if record.key is None or record.value is None:
                continue
            try:
                key = ProgressKey.decode(record.key)
                if key.flow.replace(" ", "") == name:
                    mine[(key.topic, key.partition)] = decode_progress_record(record.value)
            except CodecError as exc:
                self._skip("progress", record, str(exc))
        self.records_read["progress"] += len(records)

    def on_dr_records(self, cluster: str, records: Sequence[FollowedRecord]) -> None:
        """Apply DR states and reports of one target cluster."""
        view = self.dr.setdefault(cluster, DrView())
        for record in records:
            decoded = decode_record(record.value, offset=record.offset)
            if decoded is not None:
                view.apply(decoded)
        self.records_read["dr"] += len(records)

    def _ahead(self, kind: str, ts_ms: int, **where: str) -> bool:
        """True (counted, warned of) when `ts_ms` is too far ahead of the clock to be believed."""
        now = self._clock()
        if not too_far_ahead(ts_ms, now):
            return False
        self.records_ahead[kind] += 1
        self._ahead_log.warn(kind, ts_ms, now, **where)
        return True

    def _skip(self, kind: str, record: FollowedRecord, reason: str) -> None:
        self.records_skipped[kind] += 1
        _log.warning("record_skipped", topic_kind=kind, topic=record.topic, offset=record.offset, reason=reason)
