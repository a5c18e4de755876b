"""One flow's topic-sync rounds: create and grow remote topics, sync their configs, announce them.

A round costs one metadata listing per cluster. Configs are described only for topics being created and for
topics first seen in this leadership term, plus a sweep of every replicated topic each
`sync.topic.configs.interval.seconds`. A TopicsChanged event is published when the ready set or a partition
count changes, when a round created or grew a remote topic (also one deleted on the target and made again), and
in the first round after this instance became leader.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

import structlog

from services.topic_sync.metrics import TopicSyncMetrics
from services.topic_sync.plan import plan_topics, ready_topics, replicated
from shared.config_rules import alter_ops, creation_configs
from shared.control import ControlPublisher, RemoteTopic, TopicsChanged
from shared.errors import StraitError
from shared.filters import DefaultConfigPropertyFilter
from shared.flow_context import FlowContext
from shared.kafka.topic_admin import NewTopicSpec, TopicAdmin, TopicInfo

IDLE_INTERVAL_S = 30.0


class TopicSyncJob:
    """The LeaderJob of topic-sync for one flow."""

    def __init__(
        self,
        context: FlowContext,
        *,
        source: TopicAdmin,
        target: TopicAdmin,
        publisher: ControlPublisher,
        metrics: TopicSyncMetrics,
    ) -> None:
        flow = self.flow = context.flow
        self._settings = flow.settings
        self._source = source
        self._target = target
        self._publisher = publisher
        self._metrics = metrics
        self._topics = context.topics
        self._config_filter = DefaultConfigPropertyFilter(
            self._settings.config_properties_exclude, self._settings.use_defaults_from
        )
        self.log = structlog.get_logger("topic-sync").bind(flow=flow.name)
        self._totals = {"topics_created": 0, "partitions_added": 0, "configs_changed": 0}
        self.became_leader()

    def became_leader(self) -> None:
        """Start over: first round lists everything, syncs every config and announces."""
        self._known: set[str] = set()
        self._announced: tuple[RemoteTopic, ...] | None = None
        self._first_round = True
        self._next_sweep = 0.0

    def interval_s(self) -> float:
        """The topic refresh interval; the config interval if refresh is off; else an idle check."""
        if self._settings.refresh_topics_enabled:
            return float(self._settings.refresh_topics_interval_s)
        if self._settings.sync_topic_configs_enabled:
            return float(self._settings.sync_topic_configs_interval_s)
        return IDLE_INTERVAL_S

    def details(self) -> dict[str, Any]:
        """Announced topics and what this instance changed so far."""
        announced = self._announced or ()
        return {"topics": len(announced), **self._totals}

    async def run_round(self) -> Sequence[StraitError]:
        """List both clusters, create and grow remote topics, sync configs that are due, announce changes."""
        discover = self._first_round or self._settings.refresh_topics_enabled
        sweep = self._settings.sync_topic_configs_enabled and time.monotonic() >= self._next_sweep
        if not discover and not sweep:
            return []
        errors: list[StraitError] = []
        source = await asyncio.to_thread(self._source.list_topics)
        target = await asyncio.to_thread(self._target.list_topics)
        wanted = replicated(source, self._topics.should_replicate)
        plan = plan_topics(wanted, target, self._topics.remote_topic)
        changed = False
        if discover:
            changed = await self._create(plan.create, errors) | await self._grow(plan.grow, target, errors)
        if self._settings.sync_topic_configs_enabled:
            due = plan.existing if sweep else {s: r for s, r in plan.existing.items() if s not in self._known}
            await self._sync_configs(due, errors)
            if sweep:
                self._next_sweep = time.monotonic() + self._settings.sync_topic_configs_interval_s
        self._known = set(wanted)
        self._first_round = False
        if changed:
            target = await asyncio.to_thread(self._target.list_topics)
        await self._announce(wanted, target, errors, force=changed)
        return errors

    async def _create(self, topics: Sequence[RemoteTopic], errors: list[StraitError]) -> bool:
        if not topics:
            return False
        described, failed = await asyncio.to_thread(self._source.describe_configs, [t.source_topic for t in topics])
        errors.extend(failed)
        specs = [
            NewTopicSpec(t.remote_topic, t.partitions, creation_configs(described[t.source_topic], self._config_filter))
            for t in topics
            if t.source_topic in described
        ]
        failures = await asyncio.to_thread(
            self._target.create_topics, specs, replication_factor=self._settings.replication_factor
        )
        errors.extend(failures.values())
        created = [spec for spec in specs if spec.name not in failures]
        for spec in created:
            self.log.info("remote_topic_created", topic=spec.name, partitions=spec.partitions, configs=spec.configs)
        self._count("topics_created", self._metrics.topics_created, len(created))
        return bool(created)

    async def _grow(
        self, counts: Mapping[str, int], target: Mapping[str, TopicInfo], errors: list[StraitError]
    ) -> bool:
        if not counts:
            return False
        failures = await asyncio.to_thread(self._target.create_partitions, counts)
        errors.extend(failures.values())
        added = 0
        for topic, count in counts.items():
            if topic not in failures:
                before = target[topic].partitions
                added += count - before
                self.log.info("remote_partitions_added", topic=topic, partitions=count, before=before)
        self._count("partitions_added", self._metrics.partitions_added, added)
        return len(failures) < len(counts)

    async def _sync_configs(self, topics: Mapping[str, str], errors: list[StraitError]) -> None:
        """Describe both sides of `topics` (source -> remote) and alter the remote topics that differ."""
        if not topics:
            return
        source, failed_source = await asyncio.to_thread(self._source.describe_configs, list(topics))
        target, failed_target = await asyncio.to_thread(self._target.describe_configs, list(topics.values()))
        errors.extend(failed_source)
        errors.extend(failed_target)
        ops = {
            remote: topic_ops
            for topic, remote in topics.items()
            if topic in source and remote in target
            if (topic_ops := alter_ops(source[topic], target[remote], self._config_filter))
        }
        failures = await asyncio.to_thread(self._target.alter_configs, ops)
        errors.extend(failures.values())
        changed = 0
        for remote, topic_ops in ops.items():
            if remote not in failures:
                changed += len(topic_ops)
                self.log.info(
                    "remote_topic_configs_changed",
                    topic=remote,
                    set={op.name: op.value for op in topic_ops if op.op == "SET"},
                    reset=[op.name for op in topic_ops if op.op == "DELETE"],
                )
        self._count("configs_changed", self._metrics.configs_changed, changed)

    async def _announce(
        self, wanted: Mapping[str, int], target: Mapping[str, TopicInfo], errors: list[StraitError], *, force: bool
    ) -> None:
        """Publish the ready set when it changed, or when this round created or grew topics (a remote topic deleted
        and made again looks the same from outside, and data-mirror must look at it again)."""
        topics = ready_topics(wanted, target, self._topics.remote_topic)
        if topics == self._announced and not force:
            return
        try:
            await self._publisher.publish(TopicsChanged(flow=self.flow.name, topics=topics))
        except StraitError as error:  # the next round announces again
            errors.append(error)
            return
        self._announced = topics
        self._metrics.remote_topics.labels(self.flow.name).set(len(topics))
        self._metrics.announcements.labels(self.flow.name).inc()
        self.log.info("topics_announced", topics=len(topics), partitions=sum(t.partitions for t in topics))

    def _count(self, name: str, counter: Any, amount: int) -> None:
        if amount > 0:
            self._totals[name] += amount
            counter.labels(self.flow.name).inc(amount)
