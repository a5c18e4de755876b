"""The PySpark driver: plan slots, keep one long-lived copy task per slot running, follow their progress.

Records never reach the driver. Spark runs a new task only when a slot's assignment changes (topics or
partitions added or removed, a size limit changed), when a task failed or its executor was lost, or at start;
a running task is asked to hand over on the control topic and commits before it returns. A stop request
(SIGTERM) hands every task over, so nothing is lost and nothing is copied twice on a clean stop.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import wait as wait_for_futures
from typing import TYPE_CHECKING, Any, TypeVar

import structlog
from prometheus_client import CollectorRegistry

from services.data_mirror.control_link import ControlLink
from services.data_mirror.flow_runtime import FlowRuntime
from services.data_mirror.liveness import RoundClock
from services.data_mirror.metrics import MirrorMetrics
from services.data_mirror.mm2_metric_names import Mm2SourceMetricNames
from services.data_mirror.plan import PartitionState
from services.data_mirror.settings import DataMirrorSettings
from services.data_mirror.slot_run import SlotRun
from services.data_mirror.spark_session import spark_conf, unprotected_settings
from services.data_mirror.spark_start import SparkStart, local_cores
from services.data_mirror.task_secrets import SecretVault
from shared.cluster_watch import ClusterWatch
from shared.config import FlowConfig, MirrorMakerConfig
from shared.control import StatusReporter
from shared.control.status_reporter import State
from shared.daemon_executor import DaemonThreadExecutor
from shared.dr.records import FlowDrState, RpoSummary
from shared.dr.rpo import PartitionLag, summarize
from shared.dr.state_watch import state_details
from shared.errors import StraitError
from shared.flow_context import FlowContext
from shared.progress_store import ProgressFollower
from shared.records.progress import CopyReport, Progress
from shared.retry import Backoff

if TYPE_CHECKING:
    from pyspark import Broadcast

_log = structlog.get_logger("data-mirror")
LOOP_S = 0.2
T = TypeVar("T")
HANDOVER_WAIT_S = 60
# On stop, how long the target may take to acknowledge a hand-over request or the final status. A target that
# does not answer cannot take the tasks' commits either, so they are cancelled at once instead of waited for.
STOP_ACK_S = 3.0
SPARK_STOP_WAIT_S = 4.0
UNREACHABLE_WAIT_S = 0.5  # final flushes to a target that already failed to acknowledge the hand-over
TASK_RESTART = Backoff(first_s=0.5, max_s=10.0)  # a failed task's slot waits this long before its next task
RECOVERED_S = 10.0  # a restarted task that runs this long clears its slot's error from the status
RPO_TOPICS = 20  # topics most behind named in the status record (the metrics have every topic)


def _stop_spark(spark: Any) -> None:
    """Stop Spark, waiting `SPARK_STOP_WAIT_S` at most: every task has ended by now, so nothing of ours is left
    in the JVM. Its stop can stall for a whole heartbeat timeout (a heartbeat in flight when the receiver
    stops); the JVM then ends with this process, whose gateway connection closes."""
    stopper = threading.Thread(target=spark.stop, name="spark-stop", daemon=True)
    stopper.start()
    stopper.join(SPARK_STOP_WAIT_S)
    if stopper.is_alive():
        _log.warning("spark_stop_not_waited_for", waited_s=SPARK_STOP_WAIT_S)


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
        if settings.mm2_metric_names:
            registry.register(Mm2SourceMetricNames(self.metrics))
        self.stop_event = threading.Event()
        self._lookups = DaemonThreadExecutor(max_workers=2, name="lookup")
        self.runtimes: dict[str, FlowRuntime] = {}
        self.reporters: dict[str, StatusReporter] = {}
        self.links: dict[str, ControlLink] = {}
        self.followers: dict[str, ProgressFollower] = {}
        self.runs: dict[tuple[str, int], SlotRun] = {}
        self.vault = SecretVault()  # client secrets go to tasks in one broadcast, never in their specs
        self.secrets: Broadcast[dict[str, str]] | None = None
        self.slots = 1
        self.ready = False
        self.rounds = RoundClock()
        self.last_error: str | None = None
        self.started_ms = int(time.time() * 1000)
        self._next_refresh = 0.0
        self._generation = 0
        self._failures: dict[tuple[str, int], int] = {}
        self._not_before: dict[tuple[str, int], float] = {}
        self._last_progress: dict[tuple[str, str, int], float] = {}
        self._topic_paths: dict[tuple[str, str], str] = {}  # (flow, source topic) -> the copy path last logged
        # Status goes out on the service's own timer (`report_status`), apart from this loop: a discovery can wait
        # long on a cluster that stopped answering, and the status must say so meanwhile. `_problems`: (flow, kind)
        # -> what fails right now.
        self.watch = ClusterWatch.for_flows(flows)
        self._problems: dict[tuple[str, str], str] = {}
        self._status_lock = threading.Lock()  # one publication at a time; none after the last ("stopped")
        self._final_status_sent = False
        self._unreachable_targets: set[str] = set()
        self._dr: dict[str, FlowDrState | None] = {}  # flow -> its DR state as last read (failed over: no tasks)
        self._dr_seen: set[str] = set()

    def request_stop(self) -> None:
        """Hand every task over (they commit), then return from `run`."""
        self.stop_event.set()

    def liveness(self) -> tuple[bool, dict[str, Any]]:
        """Alive unless the running loop stopped coming round (see `liveness.RoundClock`)."""
        return self.rounds.liveness(running=self.ready and not self.stop_event.is_set())

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready once Spark runs and every flow's progress was loaded."""
        return self.ready and not self.stop_event.is_set(), {"service": "data-mirror", "last_error": self.last_error}

    def run(self) -> None:
        """The main loop; returns after a stop request, once every task handed over."""
        conf = spark_conf(
            self.config.top_level, self.settings.spark_master, slots=self.settings.tasks * len(self.flows)
        )
        if unprotected := unprotected_settings(conf):
            _log.warning(
                "spark_traffic_unprotected",
                master=conf["spark.master"],
                off=unprotected,
                hint="task specs (client settings) and records cross the network in clear; turn these back on",
            )
        starting = SparkStart(conf)  # meanwhile: the flows' internal topics, progress and first discovery
        spark: Any = None
        try:
            expected = self.settings.tasks or max(1, (local_cores(conf["spark.master"]) or 1) // len(self.flows))
            self._set_up_flows(expected)
            self._refresh_if_due()
            spark = starting.session(self.stop_event)
            if spark is None:
                return  # stopped while Spark was starting: nothing ran, nothing to hand over
            context = spark.sparkContext
            parallelism = max(1, context.defaultParallelism)
            self.slots = self.settings.tasks or max(1, parallelism // len(self.flows))
            if self.slots * len(self.flows) > parallelism:
                _log.warning(
                    "more_tasks_than_cores",
                    tasks=self.slots * len(self.flows),
                    cores=parallelism,
                    hint="copy tasks are long-lived: tasks beyond the executor cores wait; "
                    "lower STRAIT_TASKS or add cores",
                )
            self.secrets = context.broadcast(self.vault.values)
            self.ready = True
            _log.info(
                "driver_ready",
                flows=[f.name for f in self.flows],
                spark_master=context.master,
                tasks_per_flow=self.slots,
                commit_interval_ms=self.settings.commit_interval_ms,
            )
            while not self.stop_event.is_set():
                self.rounds.round()
                self._refresh_if_due()
                self._follow_progress()
                self._reconcile(context)
                self.stop_event.wait(LOOP_S)
            self._hand_over_all()
            self._follow_progress()
        finally:
            # Once a target did not acknowledge the hand-over, nothing more reaches it: do not wait on it again.
            final_wait_s = UNREACHABLE_WAIT_S if self._unreachable_targets else STOP_ACK_S
            with self._status_lock:  # after a publication under way, and the last: the timer's next one is skipped
                self._final_status_sent = True
                self._publish_status("stopped", timeout_s=final_wait_s)
            for follower in self.followers.values():
                follower.close()
            for link in self.links.values():
                link.close(timeout_s=final_wait_s)
            if spark is None:  # the set-up failed or a stop came first: a start under way is stopped if it ends soon
                starting.wait(SPARK_STOP_WAIT_S)
                spark = starting.started()
            if spark is not None:
                _stop_spark(spark)
            _log.info("driver_stopped", uptime_s=round(time.time() - self.started_ms / 1000, 1))

    def _set_up_flows(self, expected_slots: int) -> None:
        """Each target's control link, then each flow's runtime (internal topics, progress) and progress follower
        (Kafka only). A flow failed over is set up on its target only: its source may be gone.

        `expected_slots`: the slots exactly-once fences before the first task, when Spark has not told the real
        count yet (each task fences its own slot too, and the target's listed transactional ids are all fenced)."""
        for flow in self.flows:
            if flow.target not in self.links:
                self.links[flow.target] = ControlLink.open(
                    flow.target_admin_props(),
                    {f.name for f in self.flows if f.target == flow.target},
                    replication_factor=FlowContext.of(flow).internal_replication_factor,
                    cluster=flow.target,
                )
        for flow in self.flows:
            state = self.links[flow.target].dr_state(flow.name)
            failed_over = state is not None and state.stopped
            runtime = self.runtimes[flow.name] = FlowRuntime(
                flow, tasks=expected_slots, vault=self.vault, source_side=not failed_over
            )
            self._failed_over(runtime)
            self.reporters[flow.name] = StatusReporter(
                [],  # published through the flow's control link: the driver's thread has no event loop
                service="data-mirror",
                instance_id=self.settings.instance_id,
                flow=flow.name,
                snapshot=functools.partial(self._snapshot, runtime),
            )
            self.followers[flow.name] = ProgressFollower(
                flow.target_consumer_props(), runtime.clients.progress_topic, flow.name
            )

    # -- tasks -----------------------------------------------------------------------------------------
    def _reconcile(self, context: Any) -> None:
        """Collect ended tasks, ask tasks whose assignment changed to hand over, start what should run."""
        now = time.monotonic()
        for runtime in self.runtimes.values():
            flow = runtime.flow.name
            plan = {} if self._failed_over(runtime) else runtime.plan(self.slots)
            handovers: list[SlotRun] = []
            for slot in range(self.slots):
                key = (flow, slot)
                run = self.runs.get(key)
                wanted = plan.get(slot, ())
                if run is not None and run.done:
                    self._ended(run)
                    del self.runs[key]
                    run = None
                if run is not None and key in self._failures and now - run.started >= RECOVERED_S:
                    self._recovered(key)
                if run is not None:
                    changed = (
                        run.spec.partitions != wanted or run.spec.target_producer != runtime.clients.target_producer
                    )
                    if changed and not run.handover_requested:
                        handovers.append(run)
                elif wanted and now >= self._not_before.get(key, 0.0):
                    self._start(context, runtime, slot, wanted)
            if handovers:
                self._request_handover(runtime, handovers)
            self.metrics.tasks_running.labels(flow).set(sum(1 for (f, _), r in self.runs.items() if f == flow))

    def _failed_over(self, runtime: FlowRuntime) -> bool:
        """True while the flow is failed over (`strait failover`): its tasks hand over and none starts, whatever
        restarts, until a failback makes it active again. Logged when it changes."""
        flow = runtime.flow.name
        link = self.links[runtime.flow.target]
        state = link.dr_state(flow)
        self._note_read_error(flow, "dr-state", link.dr_read_error)
        before = self._dr.get(flow)
        self._dr[flow] = state
        stopped = state is not None and state.stopped
        if stopped != (before is not None and before.stopped) or flow not in self._dr_seen:
            self._dr_seen.add(flow)
            if stopped:
                assert state is not None
                _log.warning("flow_failed_over_not_copying", flow=flow, since_ts=state.ts, report=state.report_id)
            elif before is not None:
                _log.info("flow_active_again", flow=flow, action=state.action if state else None)
        if not stopped and not runtime.source_ready:
            try:  # active again after a failback: what was left undone on the source while it was failed over
                self._unless_stopping(runtime.prepare_source)
            except StraitError as exc:
                self._problems[(flow, "source")] = f"preparing the source: {exc}"
                return True  # not yet: asked again next round
            self._problems.pop((flow, "source"), None)
        return stopped

    def _start(self, context: Any, runtime: FlowRuntime, slot: int, partitions: tuple[Any, ...]) -> None:
        link = self.links[runtime.flow.target]
        try:
            control_from = self._unless_stopping(link.control_end_offset)
        except Exception as exc:  # the target does not answer: try again next round
            self._problems[(runtime.flow.name, f"slot {slot}")] = f"cannot start slot {slot}: control topic: {exc}"
            return
        if control_from is None:
            return
        self._generation += 1
        spec = runtime.clients.task(
            slot,
            self._generation,
            partitions,
            control_from_offset=control_from,
            commit_interval_ms=self.settings.commit_interval_ms,
            blocked_retry_s=self.settings.blocked_retry_s,
        )
        self.runs[(runtime.flow.name, slot)] = SlotRun(context, spec, self.secrets).start()
        self.metrics.task_starts.labels(runtime.flow.name).inc()
        _log.info(
            "task_started", flow=runtime.flow.name, slot=slot, generation=spec.generation, partitions=len(partitions)
        )

    def _ended(self, run: SlotRun) -> None:
        result = run.result
        spec = run.spec
        key = (spec.flow, spec.slot)
        if result is None or result.error is None:
            self._recovered(key)
            _log.info(
                "task_handed_over",
                flow=spec.flow,
                slot=spec.slot,
                generation=spec.generation,
                records=result.records if result else 0,
                commits=result.commits if result else 0,
                partitions=result.partitions if result else 0,
            )
            return
        failures = self._failures[key] = self._failures.get(key, 0) + 1
        self._not_before[key] = time.monotonic() + TASK_RESTART.delay(failures)
        self.metrics.task_failures.labels(spec.flow).inc()
        self._error(spec.flow, "task", f"slot {spec.slot}: {result.error}")
        self._problems[(spec.flow, f"slot {spec.slot}")] = f"slot {spec.slot}: {result.error}"

    def _recovered(self, key: tuple[str, int]) -> None:
        """The slot's task runs (or handed over) again: its last failure no longer describes the flow."""
        self._failures.pop(key, None)
        self._problems.pop((key[0], f"slot {key[1]}"), None)

    def _request_handover(self, runtime: FlowRuntime, runs: list[SlotRun], *, timeout_s: float = 10) -> bool:
        try:
            self.links[runtime.flow.target].request_handover(
                runtime.flow.name, [(run.spec.slot, run.spec.generation) for run in runs], timeout_s=timeout_s
            )
        except Exception as exc:  # not published: asked again next round
            self._error(runtime.flow.name, "handover", str(exc))
            return False
        for run in runs:
            run.handover_requested = True
        return True

    def _hand_over_all(self) -> None:
        """Stop: every task commits and returns; a task that cannot be reached is cancelled after a bound."""
        by_flow: dict[str, list[SlotRun]] = {}
        for (flow, _), run in self.runs.items():
            by_flow.setdefault(flow, []).append(run)
        for flow, runs in by_flow.items():
            if not self._request_handover(self.runtimes[flow], runs, timeout_s=STOP_ACK_S):
                self._unreachable_targets.add(self.runtimes[flow].flow.target)
                for run in runs:  # the target is not answering: nothing more can be committed there
                    _log.warning("task_cancelled", flow=flow, slot=run.spec.slot, reason="target unreachable")
                    run.cancel()
        deadline = time.monotonic() + HANDOVER_WAIT_S
        for run in self.runs.values():
            run.join(max(0.0, deadline - time.monotonic()))
        for run in self.runs.values():
            if not run.done:
                _log.warning("task_cancelled", flow=run.spec.flow, slot=run.spec.slot, waited_s=HANDOVER_WAIT_S)
                run.cancel()
                run.join(10)
            self._ended(run)
        self.runs.clear()

    # -- progress --------------------------------------------------------------------------------------
    def _follow_progress(self) -> None:
        for flow, follower in self.followers.items():
            runtime = self.runtimes[flow]
            try:
                updates = follower.poll()
            except Exception as exc:  # the target does not answer: the next round reads on
                self._error(flow, "progress", str(exc))
                continue
            self._note_read_error(flow, "progress", follower.read_error)
            for key, progress in updates:
                state = runtime.states.get(key)
                if state is not None:
                    self._apply(state, progress)

    def _note_copy_path(self, state: PartitionState, report: CopyReport) -> None:
        """Log when a topic's records start travelling as forwarded batches, or stop (and why): once per topic and
        change, naming the first partition that changed (one line per partition would be thousands at start)."""
        if report.reencoded_reason is not None:
            path = report.reencoded_reason
        elif report.forwarded:
            path = "batches"
        else:
            return
        if path == state.copy_path:
            return
        state.copy_path = path
        topic = (state.flow, state.source_topic)
        if self._topic_paths.get(topic) != path:
            self._topic_paths[topic] = path
            event = "batches_forwarded" if path == "batches" else "batches_reencoded"
            _log.info(event, flow=state.flow, topic=state.source_topic, partition=state.partition, reason=path)

    def _apply(self, state: PartitionState, progress: Progress) -> None:
        metrics = self.metrics
        mine = metrics.partition(state.flow, state.remote_topic, state.partition)
        state.next_offset = progress.next_offset
        report = progress.report
        if report is None:
            return
        now = time.monotonic()
        elapsed = now - self._last_progress.get(state.key, now - self.settings.commit_interval_ms / 1000)
        self._last_progress[state.key] = now
        if report.end_offset is not None:
            state.high_watermark = report.end_offset
        state.behind_since_ms = report.behind_since_ms
        state.records += report.records
        mine.record_count.inc(report.records)
        mine.byte_count.inc(report.bytes)
        mine.record_rate.set(report.records / elapsed if elapsed > 0 else 0)
        mine.byte_rate.set(report.bytes / elapsed if elapsed > 0 else 0)
        if report.age_ms_avg is not None:
            mine.record_age_ms.set(report.age_ms_avg)
            mine.record_age_ms_max.set(report.age_ms_max or 0)
        if report.latency_ms_avg is not None:
            mine.replication_latency_ms.set(report.latency_ms_avg)
            mine.replication_latency_ms_max.set(report.latency_ms_max or 0)
        mine.records_forwarded.inc(report.forwarded)
        if report.dropped:
            mine.records_dropped.inc(report.dropped)
        if report.returned:
            mine.records_returned.inc(report.returned)
        if report.provenance_ignored:
            metrics.provenance_ignored.labels(state.flow).inc(report.provenance_ignored)
        self._note_copy_path(state, report)
        if report.syncs:
            metrics.offset_syncs.labels(state.flow).inc(report.syncs)
        if report.syncs_failed:
            metrics.offset_syncs_failed.labels(state.flow).inc(report.syncs_failed)
        if report.read_errors:
            metrics.source_read_errors.labels(state.flow).inc(report.read_errors)
        if report.expired:
            mine.records_expired.inc(report.expired)
            _log.warning(
                "source_records_expired",
                flow=state.flow,
                topic=state.source_topic,
                partition=state.partition,
                records=report.expired,
                first_offset=report.expired_from,
                resumed_at=report.expired_to if report.expired_to is not None else progress.next_offset,
            )
        if report.reset_from is not None:
            metrics.errors.labels(state.flow, "position_reset").inc()
            _log.warning(
                "position_reset",
                flow=state.flow,
                topic=state.source_topic,
                partition=state.partition,
                committed=report.reset_from,
                resumed_at=report.reset_to if report.reset_to is not None else progress.next_offset,
                why=(
                    "the topic was made again, the source partition ends before the committed position, "
                    "or its log was truncated under it (an unclean leader election)"
                ),
            )
        self._apply_block(state, report.blocked_offset, report.blocked_reason, report.blocked_on)
        mine.partition_blocked.set(1 if state.blocked_at is not None else 0)
        if state.records_behind is not None:
            mine.records_behind.set(state.records_behind)

    def _apply_block(
        self, state: PartitionState, offset: int | None, reason: str | None, blocked_on: str | None
    ) -> None:
        """Log and count a partition that started waiting; a hold on the source (no leader, the topic not found) is
        not a record the target refused, and says so."""
        if offset is not None and state.blocked_at != offset:
            held_on_source = blocked_on == "source"
            emit = _log.warning if held_on_source else _log.error
            emit(
                "partition_held_on_source" if held_on_source else "record_refused_partition_stopped",
                flow=state.flow,
                topic=state.source_topic,
                partition=state.partition,
                offset=offset,
                reason=reason,
                remote_topic=state.remote_topic,
            )
            self.metrics.errors.labels(state.flow, "source_held" if held_on_source else "record_refused").inc()
            self.last_error = f"{state.source_topic}-{state.partition} offset {offset}: {reason}"
        elif offset is None and state.blocked_at is not None:
            _log.info("partition_resumed", flow=state.flow, topic=state.source_topic, partition=state.partition)
        state.blocked_at, state.block_reason = offset, reason

    # -- refresh ---------------------------------------------------------------------------------------
    def _refresh_if_due(self) -> None:
        triggered = False
        for link in self.links.values():
            triggered = link.topics_changed() or triggered
            for flow in sorted(link.flows):
                self._note_read_error(flow, "control", link.read_error)
        if not triggered and time.monotonic() < self._next_refresh:
            return
        for runtime in self.runtimes.values():
            if self._is_failed_over(runtime.flow.name):
                continue  # nothing is copied: its source may be gone, and looking would only log that
            try:
                lookup = self._unless_stopping(runtime.look_up)
                if lookup is None:
                    return
                if runtime.refresh(lookup):
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

    def _unless_stopping(self, call: Callable[[], T]) -> T | None:
        """`call()` on a daemon thread; None as soon as a stop is requested, leaving the call to end on its own.

        For read-only look-ups that can block for a client timeout when a cluster is gone: a stop never waits
        for them.
        """
        future = self._lookups.submit(call)
        while not self.stop_event.is_set():
            if wait_for_futures([future], timeout=LOOP_S).done:
                return future.result()
        return None

    def _note_read_error(self, flow: str, kind: str, error: str | None) -> None:
        """Show a reader's current error in the flow's status until a clean read; log and count each new one once."""
        if error is None:
            self._problems.pop((flow, kind), None)
            return
        if self._problems.get((flow, kind)) != error:
            self._error(flow, kind, error)
        self._problems[(flow, kind)] = error

    def _error(self, flow: str, kind: str, message: str) -> None:
        self.last_error = f"{flow}: {message}"
        self.metrics.errors.labels(flow, kind).inc()
        _log.error("mirror_error", flow=flow, kind=kind, error=message)

    # -- status ------------------------------------------------------------------------------------
    def report_status(self) -> None:
        """One round of the service's status timer (blocking: run on a thread): probe the flows' clusters, then
        publish each flow's status; nothing before Spark is ready, nothing after the last status ("stopped")."""
        if not self.ready or self._final_status_sent:
            return
        self.watch.probe()
        with self._status_lock:
            if not self._final_status_sent:
                self._publish_status(None)

    def _current_errors(self, runtime: FlowRuntime, blocked: list[PartitionState]) -> list[str]:
        """What fails now: unreachable clusters (named), a failing discovery or task, then refused records."""
        flow = runtime.flow
        errors = self.watch.errors([flow.source, flow.target])
        errors += [message for (name, _), message in list(self._problems.items()) if name == flow.name]
        if blocked:
            errors.append(self.last_error or f"{len(blocked)} partitions stopped at a refused record")
        return errors

    def _rpo(self, runtime: FlowRuntime, states: list[PartitionState]) -> RpoSummary:
        """What a failover now would leave behind on the flow's source, as the tasks last saw it; exported as
        metrics per flow and topic (bounded: no partition label)."""
        now_ms = int(time.time() * 1000)
        down_since = self.watch.unreachable().get(runtime.flow.source)
        lags = [
            PartitionLag(s.source_topic, s.partition, s.next_offset, s.high_watermark, s.behind_since_ms)
            for s in states
            if s.next_offset is not None
        ]
        rpo = summarize(
            lags,
            now_ms=now_ms,
            as_of_ms=int(down_since * 1000) if down_since is not None else now_ms,
            source_reachable=down_since is None,
            topics_shown=len(runtime.states),
        )
        self.metrics.observe_rpo(runtime.flow.name, rpo)
        return rpo

    def _is_failed_over(self, flow: str) -> bool:
        state = self._dr.get(flow)
        return state is not None and state.stopped

    def _snapshot(self, runtime: FlowRuntime) -> tuple[State, str | None, dict[str, Any]]:
        """A flow's state, first error and figures as the driver sees them now."""
        states = list(runtime.states.values())  # a copy: the main loop changes the set meanwhile
        blocked = [s for s in states if s.blocked_at is not None]
        errors = self._current_errors(runtime, blocked)
        flow = runtime.flow.name
        rpo = self._rpo(runtime, states)
        details = {
            **state_details(self._dr.get(flow)),
            "rpo": rpo.model_dump(exclude={"topics"}) | {"topics": [t.model_dump() for t in rpo.topics[:RPO_TOPICS]]},
            "tasks_running": sum(1 for (name, _), _run in list(self.runs.items()) if name == flow),
            "partitions": len(states),
            "records_behind": sum(s.records_behind or 0 for s in states),
            "records_mirrored": sum(s.records for s in states),
            "topics_waiting_for_remote": runtime.waiting[:50],
            "source_topics_gone": runtime.gone[:50],
            "blocked": [
                {"topic": s.source_topic, "partition": s.partition, "offset": s.blocked_at, "reason": s.block_reason}
                for s in blocked[:50]
            ],
        }
        if self._is_failed_over(flow):
            return "paused", (errors[0] if errors else None), details
        return ("degraded" if errors else "running"), (errors[0] if errors else None), details

    def _publish_status(self, state: State | None, *, timeout_s: float = 10) -> None:
        for name, reporter in list(self.reporters.items()):
            link = self.links.get(self.runtimes[name].flow.target)
            if link is None:
                continue
            try:
                link.publish_status(reporter.build(state), timeout_s=timeout_s)
            except Exception as exc:  # status is best effort; the next round tries again
                reporter.failed(exc)
            else:
                reporter.succeeded()
