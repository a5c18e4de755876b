"""Verify a flow: every chosen source partition against its remote partition, with the flow's syncs and progress.

Reads the offset syncs (to place target records whose source has gone, and to start a range in the middle) and
data-mirror's progress (how far the mirror has copied: before it a record is owed, after it not yet) once, then
each partition's two sides in one pass. Works the same on MirrorMaker 2's flows, which keep no progress: there a
tail the target lacks is reported as not yet copied. The target is compared with what the flow's transforms and
provenance make of the source (`expected`); where a transform fails on a source record, the partition is compared
again up to it, and the rest is named.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from shared.config import FlowConfig
from shared.errors import ConfigError
from shared.flow_context import FlowContext
from shared.kafka.digest_reader import PartitionEntries
from shared.kafka.end_offsets import committed_watermarks
from shared.kafka.partition_reader import read_to_end
from shared.progress_store import load_progress
from shared.reshape.reshaper import Reshaper
from shared.verify.align import WINDOW_DEFAULT, Alignment, Frame, align
from shared.verify.expected import ChainStopped, ExpectedSource, PartitionPair, flow_reshaper
from shared.verify.findings import PartitionFindings, VerifyTotals
from shared.verify.sync_index import PartitionLocator, SyncIndex

VERIFY_READER_GROUP = "strait-verify"


@dataclass(frozen=True)
class VerifyScope:
    """What to verify: topics (a regex over source topic names; empty: every topic the flow replicates) and a range
    of source offsets or record times (each end optional)."""

    topics: str = ""
    from_offset: int | None = None
    to_offset: int | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    window: int = WINDOW_DEFAULT
    timeout_s: float = 60.0

    def topic_pattern(self) -> re.Pattern[str] | None:
        """The compiled `topics` regex; ConfigError naming it when it does not compile."""
        if not self.topics:
            return None
        try:
            return re.compile(self.topics)
        except re.error as exc:
            raise ConfigError(f"--topics is not a regular expression: {exc}", key="topics", value=self.topics) from exc


@dataclass(frozen=True)
class FlowVerification:
    """Every partition's findings for one flow, their totals, and what limited the check."""

    flow: str
    findings: list[PartitionFindings]
    totals: VerifyTotals
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "flow": self.flow,
            "totals": self.totals.as_json(),
            "notes": self.notes,
            "partitions": [finding.as_json() for finding in self.findings],
        }


Progress = Callable[[str], None]


def verify_flow(flow: FlowConfig, scope: VerifyScope, *, on_partition: Progress | None = None) -> FlowVerification:
    """Compare what `scope` selects of `flow`; raises KafkaOperationError when a cluster cannot be read."""
    pattern = scope.topic_pattern()
    started, cpu_started = time.monotonic(), time.process_time()
    source = PartitionEntries(flow.source_consumer_props(), timeout_s=scope.timeout_s)
    target = PartitionEntries(flow.target_consumer_props(), timeout_s=scope.timeout_s)
    notes: list[str] = []
    try:
        context = FlowContext.of(flow)
        topics = context.topics
        chosen = [
            topic
            for topic in source.topics()
            if topics.should_replicate(topic) and (pattern is None or pattern.fullmatch(topic))
        ]
        if not chosen:
            notes.append("no source topic matched: nothing verified")
        syncs = _sync_index(context, source, target, scope.timeout_s, notes)
        positions = _positions(context, target, scope.timeout_s, notes)
        wanted = [(topic, partition) for topic in chosen for partition in source.partitions(topic) or []]
        remotes = {topic: topics.remote_topic(topic) for topic in chosen}
        remote_partitions = {topic: target.partitions(remotes[topic]) or [] for topic in chosen}
        # Progress first, then the source's ends, then the target's: the target may hold more than the progress
        # says, never less, so no record the mirror has copied is taken for missing.
        source_marks = committed_watermarks(flow.source_admin_props(), wanted, timeout_s=scope.timeout_s)
        on_target = [
            (remotes[topic], partition) for topic, partition in wanted if partition in remote_partitions[topic]
        ]
        target_marks = committed_watermarks(flow.target_admin_props(), on_target, timeout_s=scope.timeout_s)
        # The source's ends again: what it gained meanwhile the mirror may have copied before the target's ends.
        source_now = committed_watermarks(flow.source_admin_props(), wanted, timeout_s=scope.timeout_s)
        reshaper = flow_reshaper(flow, topics.policy)
        findings: list[PartitionFindings] = []
        for topic, partition in wanted:
            if on_partition is not None:
                on_partition(f"{topic}-{partition}")
            check = _PartitionCheck(
                topic, partition, remotes[topic], source_marks[(topic, partition)], source_now[(topic, partition)][1]
            )
            findings.append(
                check.run(
                    source, target, scope, target_marks.get((check.remote, partition)), syncs, positions, reshaper
                )
            )
        totals = VerifyTotals.of(
            findings,
            records_read=source.counter.records + target.counter.records,
            cpu_s=time.process_time() - cpu_started,
            wall_s=time.monotonic() - started,
        )
        return FlowVerification(flow.name, findings, totals, notes)
    finally:
        source.close()
        target.close()


def _sync_index(
    context: FlowContext, source: PartitionEntries, target: PartitionEntries, timeout_s: float, notes: list[str]
) -> SyncIndex:
    place = context.offset_syncs
    reader = source if place.on_source else target
    props = place.consumer_props(context.flow)
    if reader.partitions(place.topic) is None:
        notes.append(f"no offset syncs ({place.topic} on {place.cluster}): records whose source is gone are not placed")
        return SyncIndex()
    syncs = read_to_end(props, place.topic, group_id=VERIFY_READER_GROUP, timeout_s=timeout_s, complete=False)
    index = SyncIndex.of(syncs)
    if index.skipped:
        notes.append(f"{index.skipped} records of {place.topic} are not offset syncs and were left out")
    return index


def _positions(
    context: FlowContext, target: PartitionEntries, timeout_s: float, notes: list[str]
) -> dict[tuple[str, int], int]:
    topic = context.progress_topic
    if target.partitions(topic) is None:
        notes.append(f"no data-mirror progress ({topic}): a tail the target lacks counts as not yet copied")
        return {}
    progress = load_progress(context.flow.target_consumer_props(), topic, context.name, timeout_s=timeout_s)
    return {key: value.next_offset for key, value in progress.items()}


@dataclass(frozen=True)
class _PartitionCheck:
    topic: str
    partition: int
    remote: str
    source_marks: tuple[int, int]
    source_end_now: int  # the source's end once the target's was read

    def run(
        self,
        source: PartitionEntries,
        target: PartitionEntries,
        scope: VerifyScope,
        target_marks: tuple[int, int] | None,
        syncs: SyncIndex,
        positions: dict[tuple[str, int], int],
        reshaper: Reshaper,
    ) -> PartitionFindings:
        topic, partition, remote = self.topic, self.partition, self.remote
        low, high = self.source_marks
        start, end = _source_range(source, scope, topic, partition, low, high)
        copied_to = positions.get((topic, partition))
        if target_marks is None:
            return PartitionFindings(
                topic, partition, remote, start, end, 0, 0,
                copied_to=copied_to,
                not_verified=f"{remote} has no partition {partition} on the target",
                not_yet_copied=max(0, end - start),
            )  # fmt: skip
        bytes_before = source.counter.bytes + target.counter.bytes
        target_low, target_high = target_marks
        locate = syncs.locator(topic, partition)
        target_start = target_low
        if start > low and (down := locate.downstream_before(start)) is not None:
            target_start = max(target_low, down)
        pair = PartitionPair(topic, remote, partition)
        later = None  # a range ending before the source's end: what the target holds after it is not checked
        if end == high:
            newer = ExpectedSource(reshaper, pair, range_end=high)
            with closing(source.blocks(topic, partition, high, self.source_end_now)) as blocks:
                later = {digest for block in newer.blocks(blocks) for digest in block.digests()}
        sides = _Sides(source, target, reshaper, pair, (start, target_start, target_high), locate, scope.window)
        frame = Frame(log_start=low, source_from=start, source_to=end, copied_to=copied_to)
        stop: ChainStopped | None = None
        try:
            result, expected = sides.align(frame, later)
        except ChainStopped as exc:  # compared again up to the record it failed on: the rest cannot be
            stop = ChainStopped(exc.offset, exc.message)
            frame = Frame(log_start=low, source_from=start, source_to=exc.offset, copied_to=copied_to)
            result, expected = sides.align(frame, None)
        waits_there = stop is not None and copied_to is not None and copied_to <= stop.offset  # the mirror too
        rest = 0 if stop is None else max(0, end - stop.offset)
        return PartitionFindings(
            topic,
            partition,
            remote,
            start,
            end,
            target_start,
            target_high,
            verified=result.verified,
            missing=result.missing.finish(),
            missing_records=result.missing.records,
            altered=result.altered,
            altered_records=result.altered_records,
            duplicates=result.duplicates,
            duplicate_offsets=result.duplicate_offsets,
            unexpected=result.unexpected,
            unexpected_offsets=result.unexpected_offsets,
            expired=result.expired.finish(),
            expired_records=result.expired.records,
            source_gone=result.source_gone,
            not_yet_copied=result.not_yet_copied + (rest if waits_there else 0),
            copied_to=copied_to,
            bytes_read=source.counter.bytes + target.counter.bytes - bytes_before,
            dropped=expected.not_copied.dropped,
            returned=expected.not_copied.returned,
            target_own=expected.target_own,
            transform_failure=None if stop is None else str(stop),
            unverified=0 if waits_there else rest,
        )


@dataclass(frozen=True)
class _Sides:
    """One partition's two sides, read for a comparison (again, after a transform failed)."""

    source: PartitionEntries
    target: PartitionEntries
    reshaper: Reshaper
    pair: PartitionPair
    starts: tuple[int, int, int]  # source start; target start and end
    locate: PartitionLocator
    window: int

    def align(self, frame: Frame, later: set[int] | None) -> tuple[Alignment, ExpectedSource]:
        """The source's range up to `frame.source_to`, as the flow makes it, against the target, both read anew."""
        pair, (start, target_start, target_high) = self.pair, self.starts
        expected = ExpectedSource(self.reshaper, pair)
        source_blocks = self.source.blocks(pair.source_topic, pair.partition, start, frame.source_to)
        target_blocks = self.target.blocks(pair.remote_topic, pair.partition, target_start, target_high)
        with closing(source_blocks), closing(target_blocks):  # no read left under way when a transform fails
            found = align(
                expected.blocks(source_blocks),
                expected.target(target_blocks),
                frame,
                locate=self.locate,
                window=self.window,
                later=later,
            )
        return found, expected


def _source_range(
    source: PartitionEntries, scope: VerifyScope, topic: str, partition: int, low: int, high: int
) -> tuple[int, int]:
    start, end = low, high
    if scope.from_offset is not None:
        start = max(start, scope.from_offset)
    if scope.to_offset is not None:
        end = min(end, scope.to_offset)
    if scope.since_ms is not None:
        found = source.offset_at(topic, partition, scope.since_ms)
        start = max(start, high if found is None else found)
    if scope.until_ms is not None:
        found = source.offset_at(topic, partition, scope.until_ms)
        end = min(end, high if found is None else found)
    return start, max(start, end)
