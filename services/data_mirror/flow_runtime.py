"""One flow as the driver sees it: its clients, internal topics and the state of every mirrored partition."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import structlog

from services.data_mirror.discovery import LIST_TIMEOUT_S, MirroredTopic, discover
from services.data_mirror.plan import FlowClients, PartitionState, assign_slots
from services.data_mirror.resume import made_again
from services.data_mirror.task_secrets import SecretVault
from services.data_mirror.work import DEFAULT_BATCH_BYTES, PartitionWork
from shared.config import FlowConfig
from shared.control import CONTROL_TOPIC
from shared.control.topic_names import is_mirror_transactional_id, mirror_transactional_id
from shared.errors import KafkaOperationError
from shared.flow_context import FlowContext
from shared.kafka.topic_admin import TopicAdmin
from shared.kafka.topics import ROLLED_COMPACTED
from shared.kafka.transaction_listing import TransactionsNotListable, transactional_ids
from shared.kafka.transactions import fence_transactional_ids
from shared.progress_store import load_progress
from shared.retry import Backoff, retriable_strait_error, retry_blocking

_log = structlog.get_logger(__name__)
BATCH_HEADROOM_BYTES = 512  # record-batch header and per-record framing
LIMITS_REFRESH_S = 60
FALLBACK_SLOTS = 8  # fenced when the target cannot list its transactions: slots beyond it stay as they are
LIST_RETRY_S = 60.0  # how long a retriable listing error (a coordinator loading after a restart) is tried again


@dataclass(frozen=True)
class TopicsLookup:
    """What one look at both clusters found: see `FlowRuntime.look_up`."""

    mirrored: list[MirroredTopic]
    waiting: list[str]
    limits: dict[str, int]
    all_limits: bool  # every remote topic's limit was read (not only new topics')
    source_ids: dict[str, str]
    remote_ids: dict[str, str]


class FlowRuntime:
    """Creates the flow's internal topics, loads its progress and keeps its partition set current."""

    def __init__(self, flow: FlowConfig, *, tasks: int, vault: SecretVault, source_side: bool = True) -> None:
        """`source_side`: also make what the flow needs on its source now (a failed-over flow's source may be gone:
        `prepare_source` does it once the flow is active again)."""
        self.flow = flow
        self.context = FlowContext.of(flow)
        settings = flow.settings
        self.source_admin = TopicAdmin(flow.source, flow.source_admin_props(), timeout_s=LIST_TIMEOUT_S)
        self.target_admin = TopicAdmin(flow.target, flow.target_admin_props(), timeout_s=LIST_TIMEOUT_S)
        place = self.context.offset_syncs
        syncs_topic = place.topic
        sync_props = flow.source_producer_props() if place.on_source else flow.target_producer_props()
        syncs_admin = self.source_admin if place.on_source else self.target_admin
        consumer_props = flow.source_consumer_props()
        self.clients = FlowClients(  # what tasks get: secrets withheld, broadcast apart (task_secrets)
            flow=flow.name,
            source_consumer=vault.withhold(consumer_props),
            source_admin=vault.withhold(flow.source_admin_props()),
            target_producer=vault.withhold(flow.target_producer_props()),
            target_consumer=vault.withhold(flow.target_consumer_props()),
            sync_producer=vault.withhold(sync_props),
            offset_syncs_topic=syncs_topic,
            progress_topic=self.context.progress_topic,
            control_topic=CONTROL_TOPIC,
            exactly_once=settings.exactly_once_enabled,
            # batches (transforms and provenance included: `reshape`; exactly-once in the task's transaction)
            copy_batches=settings.copy_batches == "on" or settings.copy_batches == "auto",
            offset_lag_max=settings.offset_lag_max,
            emit_offset_syncs=settings.emit_offset_syncs_enabled,
            reset_to_latest=consumer_props.get("auto.offset.reset", "earliest") == "latest",
            transforms=flow.transforms,
            provenance=settings.provenance_enabled,
            policy=self.context.topics.policy if settings.provenance_enabled else None,
        )
        rf = settings.offset_syncs_topic_replication_factor
        self._syncs_admin, self.source_ready = syncs_admin, False
        if source_side or not place.on_source:
            self.prepare_source()
        self.target_admin.ensure_internal_topic(
            self.clients.progress_topic, replication_factor=rf, configs=ROLLED_COMPACTED
        )
        if settings.exactly_once_enabled:
            self._fence_previous_transactions(tasks)
        self.committed = load_progress(flow.target_consumer_props(), self.clients.progress_topic, flow.name)
        self.states: dict[tuple[str, int], PartitionState] = {}
        self.waiting: list[str] = []
        self.gone: list[str] = []
        self._dormant: dict[tuple[str, int], PartitionState] = {}
        self.limits: dict[str, int] = {}
        self._limits_refreshed = 0.0
        self._plans: dict[int, dict[int, tuple[PartitionWork, ...]]] = {}  # slot count -> plan, until a refresh
        self._configured_batch = int(self.clients.target_producer.get("batch.size", DEFAULT_BATCH_BYTES))
        _log.info(
            "flow_loaded",
            flow=flow.name,
            partitions_with_progress=len(self.committed),
            syncs_topic=syncs_topic,
            copy="batches" if self.clients.copy_batches else "records",
        )

    def prepare_source(self) -> None:
        """The offset-syncs topic, where it lives (MM2's shape), before any task writes a sync."""
        settings = self.flow.settings
        if settings.emit_offset_syncs_enabled:
            self._syncs_admin.ensure_internal_topic(
                self.context.offset_syncs.topic, replication_factor=settings.offset_syncs_topic_replication_factor
            )
        self.source_ready = True

    def _fence_previous_transactions(self, tasks: int) -> None:
        """Abort transactions a killed predecessor left open, in every slot the flow ever used.

        Each task fences its own slot when it starts; this also covers slots a previous run had and this one does
        not (a run with more slots, however many), found by listing the target's transactional ids, so the
        progress topic reads to its end now and no open transaction holds read_committed readers back.

        Only a broker without ListTransactions (Kafka < 3.0) falls back to the first FALLBACK_SLOTS slots; a
        retriable error (a coordinator loading after a restart, a broker away) is tried again for LIST_RETRY_S,
        and any other failure stops the flow's start: a guess could leave zombies of a larger run unfenced.
        """
        slots = tasks
        target = self.flow.target
        try:
            known = retry_blocking(
                lambda: transactional_ids(self.flow.target_admin_props(), cluster=target),
                backoff=Backoff(1.0, 10.0),
                within_s=LIST_RETRY_S,
                retry_on=retriable_strait_error,
                on_failure=lambda exc, wait: _log.info(
                    "transactions_listing_retried", flow=self.flow.name, error=str(exc), retry_in_s=wait
                ),
            )
        except TransactionsNotListable as exc:
            _log.warning("transactions_not_listed", flow=self.flow.name, error=str(exc), fenced_slots=FALLBACK_SLOTS)
            known, slots = set(), max(tasks, FALLBACK_SLOTS)
        except KafkaOperationError as exc:
            raise KafkaOperationError(
                f"exactly-once: cannot list the transactional ids on {target} to fence earlier tasks ({exc}); not"
                " starting, as a zombie of an earlier run could commit duplicates",
                operation="list transactions",
                retriable=exc.retriable,
            ) from exc
        ids = {mirror_transactional_id(self.flow.name, slot) for slot in range(slots)}
        ids |= {tid for tid in known if is_mirror_transactional_id(self.flow.name, tid)}
        fence_transactional_ids(self.flow.target_producer_props(), sorted(ids), cluster=self.flow.target)

    def look_up(self) -> TopicsLookup:
        """Both clusters' topics, their ids and the remote topics' size limits (only new ones, or all every minute).

        Blocking and read-only: a look-up abandoned half-way (the driver stopping during an outage) changes nothing.
        """
        mirrored, waiting = discover(self.context, self.source_admin, self.target_admin)
        remote_topics = [topic.remote_topic for topic in mirrored]
        stale = time.monotonic() - self._limits_refreshed > LIMITS_REFRESH_S
        wanted = remote_topics if stale else [t for t in remote_topics if t not in self.limits]
        return TopicsLookup(
            mirrored=mirrored,
            waiting=waiting,
            limits=self.target_admin.max_message_bytes(wanted),
            all_limits=stale,
            source_ids=self.source_admin.topic_ids([topic.source_topic for topic in mirrored]),
            remote_ids=self.target_admin.topic_ids(remote_topics),
        )

    def refresh(self, lookup: TopicsLookup | None = None) -> bool:
        """Apply a look-up (made now if not given); True if the partition set changed.

        A topic deleted and made again on either cluster (its topic id changed) is copied again from the source's
        first record. Partitions that stop being mirrored keep their state here, so coming back resumes where they
        were; a source topic that disappeared is listed in `gone` until it is back.
        """
        lookup = lookup or self.look_up()
        self._plans.clear()
        mirrored, self.waiting = lookup.mirrored, lookup.waiting
        self._apply_limits(lookup)
        source_ids, remote_ids = lookup.source_ids, lookup.remote_ids
        wanted: set[tuple[str, int]] = set()
        changed = False
        recreated: dict[str, tuple[tuple[bool, bool], list[PartitionState]]] = {}
        for topic in mirrored:
            source_id, remote_id = source_ids.get(topic.source_topic), remote_ids.get(topic.remote_topic)
            for partition in range(topic.partitions):
                key = (topic.source_topic, partition)
                wanted.add(key)
                state = self.states.get(key)
                if state is None:
                    changed = True
                    state = self.states[key] = self._revive(key, topic.remote_topic)
                sides = (made_again(state.source_topic_id, source_id), made_again(state.remote_topic_id, remote_id))
                if any(sides):
                    recreated.setdefault(topic.source_topic, (sides, []))[1].append(state)
                state.source_topic_id = source_id or state.source_topic_id
                state.remote_topic_id = remote_id or state.remote_topic_id
                state.max_record_bytes = self.limits.get(topic.remote_topic)
        self._copy_again(recreated)
        removed = set(self.states) - wanted
        for key in removed:
            changed = True
            self._dormant[key] = self.states.pop(key)
        self._note_missing({topic for topic, _ in removed}, {topic.source_topic for topic in mirrored})
        return changed

    def plan(self, slots: int) -> dict[int, tuple[PartitionWork, ...]]:
        """slot -> the partitions it copies (`assign_slots`), made again only after a refresh: the driver asks
        every round, and planning thousands of partitions each time cost more than the round itself."""
        found = self._plans.get(slots)
        if found is None:
            found = self._plans[slots] = assign_slots(list(self.states.values()), slots)
        return found

    def _revive(self, key: tuple[str, int], remote_topic: str) -> PartitionState:
        """A partition (again) mirrored: its state from earlier in this run, else from the committed progress."""
        dormant = self._dormant.pop(key, None)
        if dormant is not None:
            return dormant
        progress = self.committed.get(key)
        if progress is None:
            return PartitionState(self.flow.name, key[0], key[1], remote_topic)
        return PartitionState(
            self.flow.name,
            key[0],
            key[1],
            remote_topic,
            progress.next_offset,
            source_topic_id=progress.source_topic_id,
            remote_topic_id=progress.remote_topic_id,
        )

    def _copy_again(self, recreated: dict[str, tuple[tuple[bool, bool], list[PartitionState]]]) -> None:
        """Say which topics were made anew: their tasks see the new ids and copy them again from the start."""
        for topic, ((source_side, remote_side), group) in recreated.items():
            _log.warning(
                "topic_recreated_copying_again",
                flow=self.flow.name,
                topic=topic,
                remote_topic=group[0].remote_topic,
                source_recreated=source_side,
                remote_recreated=remote_side,
                partitions=len(group),
                was_at=[state.next_offset for state in group],
            )

    def _note_missing(self, removed_topics: set[str], mirrored: set[str]) -> None:
        """Log once when a topic stops being mirrored, and keep `gone` (source topics no longer there) current."""
        waiting = set(self.waiting)
        for topic in sorted(removed_topics - mirrored):
            if topic in waiting:
                _log.warning("remote_topic_missing_waiting", flow=self.flow.name, topic=topic)
            else:
                _log.warning("source_topic_gone", flow=self.flow.name, topic=topic)
        dormant_topics = {topic for topic, _ in self._dormant}
        self.gone = sorted(dormant_topics - mirrored - waiting)

    def _apply_limits(self, lookup: TopicsLookup) -> None:
        """Keep the remote topics' size limits and batches under the smallest of them."""
        if lookup.all_limits:
            self._limits_refreshed = time.monotonic()
        self.limits.update(lookup.limits)
        remote_topics = [topic.remote_topic for topic in lookup.mirrored]
        smallest = min((self.limits[t] for t in remote_topics if t in self.limits), default=DEFAULT_BATCH_BYTES)
        batch = max(1024, min(self._configured_batch, smallest - BATCH_HEADROOM_BYTES))
        if str(batch) != self.clients.target_producer.get("batch.size"):
            producer = {**self.clients.target_producer, "batch.size": str(batch)}
            self.clients = dataclasses.replace(self.clients, target_producer=producer)
