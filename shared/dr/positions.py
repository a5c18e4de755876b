"""Where a consumer group resumes when it changes clusters: pure decisions, no I/O, called by every DR action.

A group moves forward through its checkpoints (MM2's translation, exact on gap-free topics). Moving back, MM2 has
nothing: Strait walks the flow's offset syncs the other way (`OffsetSyncStore.translate_upstream`), anchored at
each partition's failover point, where a group that read everything the target held resumes on the source at the
first record that never reached the target: the old primary's un-mirrored tail, delivered or skipped by choice.
A position never goes past a record the group did not read on the cluster it leaves (records may be read again,
never skipped), and a partition where the group already stands further on is kept unless asked.
"""

from __future__ import annotations

from typing import Literal

from shared.dr.records import PartitionMove, PartitionPoint
from shared.offset_sync_store import OffsetSyncStore

TailChoice = Literal["deliver", "skip"]


def plan_partition(
    topic: str, partition: int, offset: int, previous: int | None, *, allow_rewind: bool, how: str = "checkpoint"
) -> PartitionMove:
    """Set the group to `offset`, leave it (already there), or keep a further position (unless `allow_rewind`)."""
    if previous == offset:
        action: Literal["set", "unchanged", "kept-ahead"] = "unchanged"
    elif previous is not None and previous > offset and not allow_rewind:
        action = "kept-ahead"
    else:
        action = "set"
    return PartitionMove(
        topic=topic, partition=partition, offset=offset, previous_offset=previous, action=action, how=how
    )


def back_to_source(
    syncs: OffsetSyncStore,
    point: PartitionPoint,
    downstream: int,
    *,
    tail: TailChoice,
    tail_end: int,
    log_start: int = 0,
) -> tuple[int, str]:
    """Where a group that stopped at `downstream` on the flow's target resumes on its source, and how that was found.

    At or past the failover point's target offset the group read everything the target held: it resumes at the
    first record the target never got (`deliver`), or after the source's own records written since (`skip`, at
    `tail_end`). Before it, through the offset syncs, exact inside a run of them; with no sync at or before it,
    at the source's log start (`log_start`), reading again; never later than the failover point, and never before
    the log start (an offset retention took would send the consumer to its `auto.offset.reset`, maybe the end)."""
    if downstream >= point.target_offset:
        return (point.source_offset, "tail") if tail == "deliver" else (max(point.source_offset, tail_end), "end")
    found = syncs.translate_upstream(point.topic, point.partition, downstream)
    if found is None:
        return log_start, "start"  # no sync at or before it (compacted away): from the log start, reading again
    offset = min(found, point.source_offset)
    if offset < log_start:  # retention took what the syncs place it at: the oldest record still there, not a reset
        return log_start, "log-start"
    return offset, "reverse"
