"""What the batch producer is handed and hands back: a batch for a target partition, and what became of it; how
batches for one leader are cut into Produce requests."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from shared.kafka.record_batches import TargetBatch
from shared.partition_key import PartitionKey

REQUEST_OVERHEAD_BYTES = 512  # a Produce request's header and per-topic, per-partition framing, generously


def request_share(key: PartitionKey, batch: OutgoingBatch) -> int:
    """The bytes `batch` adds to a Produce request: its records and its topic's and partition's framing."""
    return len(batch.payload) + REQUEST_OVERHEAD_BYTES // 4 + len(key[0])


def usable_request_bytes(max_request_bytes: int) -> int:
    """What a Produce request of `max_request_bytes` has room for once its own header is written."""
    return max_request_bytes - REQUEST_OVERHEAD_BYTES


def split_requests(
    batches: Mapping[PartitionKey, OutgoingBatch], max_request_bytes: int
) -> list[dict[PartitionKey, OutgoingBatch]]:
    """The batches for one leader as Produce requests of at most `max_request_bytes` each (a batch larger than
    that alone goes in a request of its own): a request bigger than the broker's `socket.request.max.bytes` makes
    it close the connection, and the same request would be built again after every reconnect."""
    requests: list[dict[PartitionKey, OutgoingBatch]] = []
    current: dict[PartitionKey, OutgoingBatch] = {}
    size = REQUEST_OVERHEAD_BYTES
    for key, batch in batches.items():
        added = request_share(key, batch)
        if current and size + added > max_request_bytes:
            requests.append(current)
            current, size = {}, REQUEST_OVERHEAD_BYTES
        current[key] = batch
        size += added
    if current:
        requests.append(current)
    return requests


@dataclass(slots=True)
class OutgoingBatch:
    """A batch made for the target (producer fields still unset) and the caller's note of what it holds."""

    key: PartitionKey
    payload: TargetBatch
    records: int
    note: Any
    sequence: int = -1
    queued_at: float = 0.0
    order: int = 0


class Outcome(Enum):
    """What became of a batch. Our own values, never a broker's error code (the broker's -1 is an error too)."""

    ACKNOWLEDGED = "acknowledged"  # written; `base_offset` is its first offset on the target
    REFUSED = "refused"  # the broker answered with an error about the records (`error` holds its code)
    DROPPED = "dropped"  # not written: sent or queued after a refused batch of its partition


@dataclass(frozen=True, slots=True)
class Landed:
    """What became of one batch: its first offset on the target, or why it was not written."""

    batch: OutgoingBatch
    outcome: Outcome
    base_offset: int = -1
    error: int = 0
    message: str = ""
