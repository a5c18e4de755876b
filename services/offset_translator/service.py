"""The translator's background work: follow the internal topics into the index, list topic names per cluster,
and report its own status on each target cluster."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from services.offset_translator.feeds import build_followers
from services.offset_translator.flows import ServedFlow, cluster_policy
from services.offset_translator.history import HistoryRing
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.settings import TranslatorSettings
from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig, MirrorMakerConfig
from shared.control import ControlPublisher, StatusReporter
from shared.control.events import now_ms
from shared.control.status_reporter import State
from shared.errors import KafkaOperationError, StraitError
from shared.flow_context import FlowContext
from shared.flow_selection import selected_flows
from shared.kafka.topic_admin import TopicAdmin
from shared.service import Service

SERVICE_NAME = "offset-translator"
FINAL_STATUS_TIMEOUT_S = 3.0  # with the publisher's own stop bound, SIGTERM ends within 10 s even with the cluster gone
FOLLOW_ERROR_WINDOW_S = 30.0


def build_index(
    config: MirrorMakerConfig, flows: tuple[FlowConfig, ...], *, clock: Callable[[], int] = now_ms
) -> TranslatorIndex:
    """An empty index for `flows`, knowing every cluster of the config; `clock` is the API's (epoch ms)."""
    return TranslatorIndex(
        [ServedFlow.of(flow) for flow in flows],
        {alias: cluster_policy(config, alias) for alias in config.clusters},
        clock=clock,
    )


class TranslatorService(Service):
    """Feeds the index from Kafka; the API only reads it. Stops cleanly on SIGTERM through the app's lifespan."""

    name = SERVICE_NAME

    def __init__(
        self,
        settings: TranslatorSettings,
        config: MirrorMakerConfig,
        flows: tuple[FlowConfig, ...],
        index: TranslatorIndex,
    ) -> None:
        super().__init__()
        self._settings = settings
        self.index = index
        feeds = build_followers(index, flows, self._follow_failed)
        self._followers, self._status_followers = feeds.followers, feeds.status
        self._listed = {alias: cluster.admin_props() for alias, cluster in config.clusters.items()}
        self._topic_admins: dict[str, TopicAdmin] = {}
        self._flows = flows
        # Built in on_start: aiokafka clients belong to the running loop.
        self._publishers: dict[str, ControlPublisher] = {}
        self._publishers_started: set[str] = set()
        # A publisher's start runs in its own task, shielded: cancelling it midway would leak its connection.
        self._publisher_starts: dict[str, asyncio.Task[None]] = {}
        self._reporters: list[tuple[str, StatusReporter]] = []
        # What fails right now (the status shows only that): clusters that do not answer, listings that fail,
        # and followers that failed within the last FOLLOW_ERROR_WINDOW_S (they retry every few seconds).
        self._watch = ClusterWatch.for_flows(flows)
        self._listing_errors: dict[str, str] = {}
        self._follow_errors: dict[str, tuple[str, float]] = {}
        self.history = HistoryRing(settings.history_interval_s)

    async def on_start(self) -> None:
        """Start following every topic and the periodic listing and status work."""
        for flow in self._flows:
            if flow.target not in self._publishers:
                self._publishers[flow.target] = FlowContext.of(flow).publisher()
            reporter = StatusReporter(
                [self._publishers[flow.target]],
                service=SERVICE_NAME,
                instance_id=self._settings.instance_id,
                flow=flow.name,
                snapshot=self._snapshot,
            )
            self._reporters.append((flow.target, reporter))
        for follower in self._followers:
            self.spawn(follower.run(), f"follow:{follower.topic}")
        self.every(self._settings.topology_refresh_s, self._list_topics, "list-topics")
        self.every(self._settings.status_interval_s, self._report, "status")
        self.every(self._settings.history_interval_s, self._sample_history, "history")

    async def on_stop(self) -> None:
        """Publish a final "stopped" status (bounded), then close the publishers."""
        await self._settle_publisher_starts()
        if self._publishers_started:
            unpublished: list[str] = []
            try:
                async with asyncio.timeout(FINAL_STATUS_TIMEOUT_S):
                    for target, reporter in self._reporters:
                        if target in self._publishers_started and not await reporter.publish("stopped"):
                            unpublished.append(f"{reporter.instance}: {reporter.failure}")
            except TimeoutError:
                unpublished.append(f"no answer within {FINAL_STATUS_TIMEOUT_S:g} s")
            if unpublished:  # best effort, like every status report
                self.log.warning("final_status_not_published", error="; ".join(unpublished))
        for publisher in reversed(self._publishers.values()):
            await publisher.stop()

    async def _settle_publisher_starts(self) -> None:
        """Let starts still under way finish (bounded), so that every started publisher gets stopped."""
        pending = [task for task in self._publisher_starts.values() if not task.done()]
        if pending:
            _, still_pending = await asyncio.wait(pending, timeout=FINAL_STATUS_TIMEOUT_S)
            for task in still_pending:
                task.cancel()
            await asyncio.gather(*still_pending, return_exceptions=True)
        for alias, task in self._publisher_starts.items():
            if not task.cancelled() and task.exception() is None:
                self._publishers_started.add(alias)

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready once every served flow's checkpoints and offset syncs were read to their end."""
        ready, details = super().readiness()
        return ready and self.index.loaded, {**details, "loading": self.index.loading()}

    def unreachable(self) -> dict[str, float]:
        """Clusters of the served flows that did not answer the last probe: alias -> since when (epoch s)."""
        return self._watch.unreachable()

    def fetched_ms(self) -> dict[str, int]:
        """Per target cluster, when it last answered the translator's fetch of its status topic (epoch ms)."""
        return {cluster: f.fetched_ms for cluster, f in self._status_followers.items() if f.fetched_ms is not None}

    async def _sample_history(self) -> None:
        self.history.sample(self.index, self.index.now_ms(), stale_after_s=self._settings.status_stale_after_s)

    def _follow_failed(self, where: str, error: KafkaOperationError) -> None:
        self.record_error(f"follow {where}", error)
        self._follow_errors[where] = (f"follow {where}: {error}", time.monotonic())

    def current_errors(self) -> list[str]:
        """Problems as of now: unreachable clusters first (they name the cluster), then failing work."""
        recent = time.monotonic() - FOLLOW_ERROR_WINDOW_S
        follow = [message for message, at in list(self._follow_errors.values()) if at >= recent]
        return [*self._watch.errors(), *self._listing_errors.values(), *follow]

    def _snapshot(self) -> tuple[State, str | None, Mapping[str, Any]]:
        flows = self.index.flows
        details = {
            "groups": sum(self.index.checkpoints.group_count(key) for key in flows),
            "checkpoints": sum(self.index.checkpoints.checkpoint_count(key) for key in flows),
            "loading": self.index.loading(),
        }
        errors = self.current_errors()
        state: State = "starting" if not self.index.loaded else ("degraded" if errors else "running")
        return state, errors[0] if errors else None, details

    async def _list_topics(self) -> None:
        for alias, props in self._listed.items():
            admin = self._topic_admins.get(alias)
            if admin is None:
                admin = self._topic_admins[alias] = TopicAdmin(alias, props, timeout_s=10)
            try:
                topics = await asyncio.to_thread(admin.list_topics)
            except StraitError as exc:
                self.record_error(f"list topics on {alias}", exc)
                self._listing_errors[alias] = str(exc)
                continue
            self._listing_errors.pop(alias, None)
            self.index.set_topics(alias, topics, now_ms())

    async def _report(self) -> None:
        # Status is best effort: a cluster that is down must not stop the translator from answering.
        await self._watch.probe_async()
        for alias, publisher in self._publishers.items():
            if alias in self._publishers_started:
                continue
            start = self._publisher_starts.get(alias)
            if start is None or start.done():
                start = self._publisher_starts[alias] = asyncio.create_task(publisher.start())
            try:
                await asyncio.shield(start)
            except Exception as exc:
                self.record_error(f"status publisher on {alias}", exc)
                continue
            self._publishers_started.add(alias)
        for target, reporter in self._reporters:
            if target not in self._publishers_started:
                continue
            if not await reporter.publish():
                self.last_error = f"publish status: {reporter.failure}"


def build(settings: TranslatorSettings, config: MirrorMakerConfig) -> TranslatorService:
    """The service for the flows `settings.flows` names (every enabled flow by default)."""
    flows = selected_flows(config, settings.flows, require_enabled=False)
    return TranslatorService(settings, config, flows, build_index(config, flows))
