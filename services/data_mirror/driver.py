"""The PySpark driver loop: refresh the partition set, run one epoch of tasks, apply results, report.

Records never reach the driver: tasks return counts and offsets. A stop request (SIGTERM) lets the
running epoch finish and commit, so nothing is lost and nothing is copied twice on a clean stop.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import structlog
from prometheus_client import CollectorRegistry

from services.data_mirror.control_link import ControlLink
from services.data_mirror.executor import run_task
from services.data_mirror.flow_runtime import FlowRuntime
from services.data_mirror.metrics import MirrorMetrics
from services.data_mirror.plan import PartitionState, plan_epoch
from services.data_mirror.settings import DataMirrorSettings
from services.data_mirror.spark_session import spark_conf, start_spark
from services.data_mirror.work import PartitionResult, TaskResult
from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig, MirrorMakerConfig
from shared.control import ServiceStatus
from shared.errors import StraitError

_log = structlog.get_logger("data-mirror")


class MirrorDriver:
    """Mirrors every given flow until `request_stop`."""

    def __init__(
        self,
        settings: DataMirrorSettings,
        config: MirrorMakerConfig,
        flows: list[FlowConfig],
        registry: CollectorRegistry,
    ) -> None:
        self.settings = settings
        self.config = config
        self.flows = flows
        self.metrics = MirrorMetrics(registry)
        self.stop_event = threading.Event()
        self.runtimes: dict[str, FlowRuntime] = {}
        self.links: dict[str, ControlLink] = {}
        self.ready = False
        self.last_error: str | None = None
        self.started_ms = int(time.time() * 1000)
        self._next_refresh = 0.0
        self._failures_in_a_row = 0
        # Status goes out from its own thread: an epoch or a discovery can wait long on a cluster that stopped
        # answering, and the status must say so meanwhile. `_problems`: (flow, kind) -> what fails right now.
        self.watch = ClusterWatch.for_flows(flows)
        self._problems: dict[tuple[str, str], str] = {}
        self._status_stop = threading.Event()
        self._status_thread: threading.Thread | None = None

    def request_stop(self) -> None:
        """Finish the running epoch, commit, then return from `run`."""
        self.stop_event.set()

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready once Spark runs and every flow's progress was loaded."""
        return self.ready and not self.stop_event.is_set(), {"service": "data-mirror", "last_error": self.last_error}

    def run(self) -> None:
        """The main loop; returns after a stop request."""
        spark = start_spark(spark_conf(self.config.top_level, self.settings.spark_master))
        context = spark.sparkContext
        tasks = self.settings.tasks or max(1, context.defaultParallelism)
        try:
            for flow in self.flows:
                self.runtimes[flow.name] = FlowRuntime(flow, tasks=tasks)
                by_target = [f.name for f in self.flows if f.target == flow.target]
                if flow.target not in self.links:
                    self.links[flow.target] = ControlLink(
                        flow.target_admin_props(),
                        set(by_target),
                        replication_factor=flow.settings.checkpoints_topic_replication_factor,
                    )
            self.ready = True
            _log.info("driver_ready", flows=[f.name for f in self.flows], spark_master=context.master, tasks=tasks)
            self._status_thread = threading.Thread(target=self._report_periodically, name="status", daemon=True)
            self._status_thread.start()
            while not self.stop_event.is_set():
                self._refresh_if_due()
                specs = plan_epoch(
                    [s for rt in self.runtimes.values() for s in rt.states.values()],
                    {name: rt.clients for name, rt in self.runtimes.items()},
                    tasks_per_flow=tasks,
                    epoch_ms=self.settings.epoch_ms,
                    now=time.monotonic(),
                )
                if not specs:
                    self.stop_event.wait(min(1.0, max(0.05, self._next_refresh - time.monotonic())))
                else:
                    began = time.monotonic()
                    try:
                        results: list[TaskResult] = context.parallelize(specs, len(specs)).map(run_task).collect()
                    except Exception as exc:  # a lost executor or worker: retry the epoch from committed progress
                        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                        results = [
                            TaskResult(spec.flow, spec.slot, error=f"spark job failed: {first_line}") for spec in specs
                        ]
                    self._apply(results, time.monotonic() - began)
        finally:
            self._status_stop.set()
            if self._status_thread is not None:
                self._status_thread.join(timeout=30)
            self._publish_status("stopped")
            for link in self.links.values():
                link.close()
            spark.stop()
            _log.info("driver_stopped", uptime_s=round(time.time() - self.started_ms / 1000, 1))

    # -- refresh and results -------------------------------------------------------------------------
    def _refresh_if_due(self) -> None:
        triggered = any(link.topics_changed() for link in self.links.values())
        if not triggered and time.monotonic() < self._next_refresh:
            return
        for runtime in self.runtimes.values():
            try:
                if runtime.refresh():
                    _log.info("partitions_changed", flow=runtime.flow.name, partitions=len(runtime.states))
                self.metrics.partitions.labels(runtime.flow.name).set(len(runtime.states))
                self.metrics.topics_waiting.labels(runtime.flow.name).set(len(runtime.waiting))
            except StraitError as exc:
                self._error(runtime.flow.name, "discovery", str(exc))
                self._problems[(runtime.flow.name, "discovery")] = f"discovery: {exc}"
            else:
                self._problems.pop((runtime.flow.name, "discovery"), None)
        interval = min(rt.flow.settings.refresh_topics_interval_s for rt in self.runtimes.values())
        self._next_refresh = time.monotonic() + interval

    def _apply(self, results: list[TaskResult], seconds: float) -> None:
        self.metrics.epochs.inc()
        self.metrics.epoch_seconds.observe(seconds)
        failed = 0
        first_failure: dict[str, str] = {}
        succeeded: set[str] = set()
        for task in results:
            runtime = self.runtimes[task.flow]
            if task.error is not None:
                failed += 1
                self._error(task.flow, "task", f"slot {task.slot}: {task.error}")
                first_failure.setdefault(task.flow, f"slot {task.slot}: {task.error}")
            else:
                succeeded.add(task.flow)
            for result in task.partitions:
                state = runtime.states.get((result.source_topic, result.partition))
                if state is not None:
                    self._apply_partition(state, result, task.duration_s)
        for flow in {task.flow for task in results}:
            if flow in succeeded:
                self._problems.pop((flow, "tasks"), None)
            else:  # no task of the flow copied anything this epoch: the flow is down, not one partition
                self._problems[(flow, "tasks")] = f"every task failed: {first_failure[flow]}"
        self._failures_in_a_row = self._failures_in_a_row + 1 if failed == len(results) else 0
        if self._failures_in_a_row:
            self.stop_event.wait(min(10.0, 0.5 * 2 ** min(self._failures_in_a_row, 5)))

    def _apply_partition(self, state: PartitionState, result: PartitionResult, seconds: float) -> None:
        labels = (state.flow, state.remote_topic, str(state.partition))
        metrics = self.metrics
        _log.debug(
            "partition_epoch",
            topic=state.source_topic,
            partition=state.partition,
            start=result.start_offset,
            next=result.next_offset,
            records=result.records,
            first=result.first_sync,
            last=result.last_sync,
            failed=result.failed_offset,
        )
        if result.expired_records:
            metrics.records_expired.labels(*labels).inc(result.expired_records)
            _log.warning(
                "source_records_expired",
                flow=state.flow,
                topic=state.source_topic,
                partition=state.partition,
                records=result.expired_records,
                resumed_at=result.start_offset,
            )
        if result.failed_offset is not None:
            if state.blocked_at != result.failed_offset:
                _log.error(
                    "record_refused_partition_stopped",
                    flow=state.flow,
                    topic=state.source_topic,
                    partition=state.partition,
                    offset=result.failed_offset,
                    reason=result.failure,
                    remote_topic=state.remote_topic,
                )
                metrics.errors.labels(state.flow, "record_refused").inc()
            state.blocked_at, state.block_reason = result.failed_offset, result.failure
            state.retry_at = time.monotonic() + self.settings.blocked_retry_s
            self.last_error = f"{state.source_topic}-{state.partition} offset {result.failed_offset}: {result.failure}"
        elif state.blocked_at is not None and result.next_offset > state.blocked_at:
            _log.info("partition_resumed", flow=state.flow, topic=state.source_topic, partition=state.partition)
            state.blocked_at = state.block_reason = None
        metrics.partition_blocked.labels(*labels).set(1 if state.blocked_at is not None else 0)
        state.next_offset = result.next_offset
        state.high_watermark = result.high_watermark
        state.records += result.records
        metrics.record_count.labels(*labels).inc(result.records)
        metrics.byte_count.labels(*labels).inc(result.bytes)
        metrics.record_rate.labels(*labels).set(result.records / seconds if seconds else 0)
        metrics.byte_rate.labels(*labels).set(result.bytes / seconds if seconds else 0)
        if result.records:
            metrics.record_age_ms.labels(*labels).set(result.age_ms_sum / result.records)
            metrics.record_age_ms_max.labels(*labels).set(result.age_ms_max)
            metrics.replication_latency_ms.labels(*labels).set(result.latency_ms_sum / result.records)
            metrics.replication_latency_ms_max.labels(*labels).set(result.latency_ms_max)
        if state.records_behind is not None:
            metrics.records_behind.labels(*labels).set(state.records_behind)
        if result.syncs_written:
            metrics.offset_syncs.labels(state.flow).inc(result.syncs_written)

    def _error(self, flow: str, kind: str, message: str) -> None:
        self.last_error = f"{flow}: {message}"
        self.metrics.errors.labels(flow, kind).inc()
        _log.error("mirror_error", flow=flow, kind=kind, error=message)

    # -- status ------------------------------------------------------------------------------------
    def _report_periodically(self) -> None:
        """Status thread: every `status_interval_s`, probe the flows' clusters, then publish each flow's status."""
        while True:
            self.watch.probe()
            self._publish_status(None)
            if self._status_stop.wait(self.settings.status_interval_s):
                return

    def _current_errors(self, runtime: FlowRuntime, blocked: list[PartitionState]) -> list[str]:
        """What fails now: unreachable clusters (named), a failing discovery or epoch, then refused records."""
        flow = runtime.flow
        errors = self.watch.errors([flow.source, flow.target])
        errors += [message for (name, _), message in list(self._problems.items()) if name == flow.name]
        if blocked:
            errors.append(self.last_error or f"{len(blocked)} partitions stopped at a refused record")
        return errors

    def _publish_status(self, state: str | None) -> None:
        for runtime in list(self.runtimes.values()):
            states = list(runtime.states.values())  # a copy: the main loop changes the set meanwhile
            blocked = [s for s in states if s.blocked_at is not None]
            errors = self._current_errors(runtime, blocked)
            current = state or ("degraded" if errors else "running")
            status = ServiceStatus(
                flow=runtime.flow.name,
                service="data-mirror",
                instance=f"{self.settings.instance_id}:{runtime.flow.name}",
                state=current,  # type: ignore[arg-type]
                started_ts=self.started_ms,
                last_error=errors[0] if errors else None,
                details={
                    "partitions": len(states),
                    "records_behind": sum(s.records_behind or 0 for s in states),
                    "records_mirrored": sum(s.records for s in states),
                    "topics_waiting_for_remote": runtime.waiting[:50],
                    "source_topics_gone": runtime.gone[:50],
                    "blocked": [
                        {
                            "topic": s.source_topic,
                            "partition": s.partition,
                            "offset": s.blocked_at,
                            "reason": s.block_reason,
                        }
                        for s in blocked[:50]
                    ],
                },
            )
            link = self.links.get(runtime.flow.target)
            if link is None:
                continue
            try:
                link.publish_status(status)
            except Exception as exc:  # status is best effort; the next round tries again
                _log.warning("status_not_published", flow=runtime.flow.name, error=str(exc))
