"""Did the source log diverge below a copy position? (KIP-320, as Kafka's Java consumer asks after a leader change.)

The leader says where the leader epoch of the position ends in its log now: an end below the position is where an
unclean election truncated the log, and what is there from that offset on is new. Until a leader has answered,
nothing may reset the position: copying again from the log start duplicates, skipping to its end loses, and going on
at the position skips the new records written below it. A partition left out of the answer waits for one.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.data_mirror.task_clients import TaskClients
from shared.partition_key import PartitionKey


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
    return {key: (end if 0 <= end < asked[key][1] else None) for key, end in ends.items() if key in asked}
