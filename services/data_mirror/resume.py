"""Where a partition's copy goes on: at a task's start, after OFFSET_OUT_OF_RANGE, after a truncation (KIP-320).

The one home of that decision for the task loop and both copiers. Its parts:
- `reset_offset`: what `auto.offset.reset` says (MM2's consumer: earliest unless set to latest);
- `committed_start`: a committed position against the log as it is now (made again, expired, past the end);
- `out_of_range`: a fetch position the source no longer holds (retention passed it, or the log now ends before it);
- `diverged_below`: did the log diverge below a position? The leader says where the leader epoch of the position
  ends in its log now: an end below the position is where an unclean election truncated the log, and what is there
  from that offset on is new. Until a leader has answered, nothing may reset the position: copying again from the
  log start duplicates, skipping to its end loses, and going on at the position skips the new records written
  below it. A partition left out of the answer waits for one.
A log that goes back (made again, truncated) takes the progress back with the copy (`PartitionCopy.diverge`): a
restart before the copy passes the old position would otherwise skip the new log's records up to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from services.data_mirror.task_clients import TaskClients
from shared.partition_key import PartitionKey


class Resume(Enum):
    AT_POSITION = "at the position"  # the log holds the position: nothing to do
    EXPIRED = "expired"  # retention deleted the records up to `offset`: counted as expired, never silently
    BACKWARDS = "backwards"  # the log from `offset` on is not what was copied: copied again, progress goes back
    RESET = "reset"  # where auto.offset.reset says, with no copied progress to keep (a first start)


@dataclass(frozen=True, slots=True)
class Where:
    offset: int
    why: Resume


def reset_offset(low: int, high: int, *, to_latest: bool) -> int:
    """Where `auto.offset.reset` puts a partition with no usable position: its log end if latest, else its start."""
    return high if to_latest else low


def made_again(known: str | None, current: str | None) -> bool:
    """True when a topic id we knew differs from the topic's id now (deleted and created again meanwhile)."""
    return known is not None and current is not None and known != current


def committed_start(
    committed: int | None, low: int, high: int, *, to_latest: bool, made_again: bool, epoch_known: bool
) -> Where:
    """Where a task starts a partition whose progress says `committed` (None: never copied) in a log of
    [low, high). A topic made again is copied from its start; a position below the log start copies what is left
    (as MM2 does, whatever auto.offset.reset says); one past the end with no leader epoch to ask where the log
    diverged is reset as auto.offset.reset says (with an epoch, `diverged_below` is asked first)."""
    if committed is None:
        return Where(reset_offset(low, high, to_latest=to_latest), Resume.RESET)
    if made_again:
        return Where(low, Resume.BACKWARDS)
    if committed < low:
        return Where(low, Resume.EXPIRED)
    if committed > high and not epoch_known:
        return Where(reset_offset(low, high, to_latest=to_latest), Resume.BACKWARDS)
    return Where(committed, Resume.AT_POSITION)


def out_of_range(position: int, low: int, high: int, *, to_latest: bool, diverged: int | None = None) -> Where:
    """Where a fetch `position` the source answered OFFSET_OUT_OF_RANGE for goes on, the log being [low, high)
    now: where the log diverged if a leader said so; at the position if the log holds it again (a leader caught
    up); past the end, backwards as auto.offset.reset says (made again, or truncated with no epoch to say where);
    below the start, forwards as it says, the records between expired."""
    if diverged is not None:
        return Where(diverged, Resume.BACKWARDS)
    if low <= position <= high:
        return Where(position, Resume.AT_POSITION)
    resume = reset_offset(low, high, to_latest=to_latest)
    if position > high:
        return Where(resume, Resume.BACKWARDS)
    return Where(resume, Resume.EXPIRED)


def diverged_at(epoch_end: int, position: int) -> int | None:
    """Where the log diverged below `position`, given where the leader says the position's epoch ends now (-1:
    it does not know that epoch): that end when it is below the position, else None."""
    return epoch_end if 0 <= epoch_end < position else None


def diverged_below(
    clients: TaskClients, asked: Mapping[PartitionKey, tuple[int, int]]
) -> dict[PartitionKey, int | None]:
    """`asked`: partition -> (leader epoch of the position, position). For each partition a leader answered for:
    the offset where its log diverged below the position, or None when it did not (the epoch ends at or past the
    position, or the leader no longer knows the epoch: auto.offset.reset decides then). A failed look-up answers
    for none."""
    if not asked:
        return {}
    try:
        ends = clients.epoch_ends({key: epoch for key, (epoch, _position) in asked.items()})
    except Exception:  # a leader that moved again, a lost connection, a timeout: the caller asks again
        return {}
    return {key: diverged_at(end, asked[key][1]) for key, end in ends.items() if key in asked}
