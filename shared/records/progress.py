"""data-mirror's progress records on `strait.offsets.<source>.internal`: next source offset per partition.

Key and value are compact JSON so operators can read them with any console consumer. A copy task writes one
per partition each commit interval in which something changed; besides the position it carries what the task
saw since its previous record (`CopyReport`), which is how the driver learns counts, lag and refusals from
long-lived tasks without a per-epoch result.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from shared.errors import CodecError


@dataclass(frozen=True)
class ProgressKey:
    """Which flow and source partition a progress record is about."""

    flow: str
    topic: str
    partition: int

    def encode(self) -> bytes:
        """Stable bytes (the compaction key)."""
        return json.dumps([self.flow, self.topic, self.partition], separators=(",", ":")).encode()

    @classmethod
    def decode(cls, raw: bytes) -> ProgressKey:
        """Parse a key; CodecError if it is not one of ours."""
        try:
            flow, topic, partition = json.loads(raw)
        except (ValueError, TypeError, RecursionError) as exc:  # RecursionError: hostile nesting
            raise CodecError(f"progress key is not [flow, topic, partition]: {raw[:80]!r}") from exc
        if not (isinstance(flow, str) and isinstance(topic, str) and isinstance(partition, int)):
            raise CodecError(f"progress key has wrong types: {raw[:80]!r}")
        return cls(flow, topic, partition)


_COUNTS = frozenset(
    {
        "records",
        "bytes",
        "expired",
        "syncs",
        "syncs_failed",
        "read_errors",
        "forwarded",
        "dropped",
        "returned",
        "provenance_ignored",
    }
)


@dataclass(frozen=True)
class CopyReport:
    """What a task did for one partition since its previous progress record (counts are deltas)."""

    records: int = 0
    bytes: int = 0
    latency_ms_avg: float | None = None
    latency_ms_max: float | None = None
    age_ms_avg: float | None = None
    age_ms_max: float | None = None
    end_offset: int | None = None  # the source partition's end offset as the task last saw it
    expired: int = 0  # records skipped before they were copied (deleted by source retention, or auto.offset.reset)
    expired_from: int | None = None  # the first offset skipped since the previous report
    expired_to: int | None = None  # the offset copying went on from after the last skip (exclusive end)
    reset_from: int | None = None  # a position copying went back from (made again, truncated, past the end)
    reset_to: int | None = None  # where copying went on after that reset
    blocked_offset: int | None = None  # the record the target refuses; nothing at or after it is copied
    blocked_reason: str | None = None
    blocked_since_ms: int | None = None
    # "source": the source cannot be read there now (no leader, topic not found) and is looked at again; None: the
    # target refuses the record at `blocked_offset` (or it is corrupt on the source) until its retry
    blocked_on: str | None = None
    syncs: int = 0
    syncs_failed: int = 0
    read_errors: int = 0  # retriable errors the task's source consumer reported (librdkafka retries them)
    forwarded: int = 0  # of `records`, those in source batches forwarded unchanged (the rest went one by one)
    reencoded_reason: str | None = None  # why the last batch that was not forwarded unchanged was re-encoded
    dropped: int = 0  # records the flow's transforms dropped (not copied, by configuration)
    returned: int = 0  # records not copied because their provenance names the target (they came from it)
    provenance_ignored: int = 0  # provenance headers on a topic their path does not name: copied as originals
    # Since when (epoch ms) the source has held a record not yet on the target, as the task saw its end move; None
    # when nothing was behind at the commit (the age of the oldest record a failover now would leave behind).
    behind_since_ms: int | None = None

    def encode(self) -> dict[str, Any]:
        """Only the fields that say something (keeps the record small): no None, and no zero counts."""
        return {
            name: value
            for name, value in asdict(self).items()
            if value is not None and not (name in _COUNTS and value == 0)
        }

    @classmethod
    def decode(cls, raw: object) -> CopyReport | None:
        """Best effort: a report is for metrics and status only, so a field of the wrong type is left out."""
        if not isinstance(raw, dict):
            return None
        kept: dict[str, Any] = {}
        for item in fields(cls):
            value = raw.get(item.name)
            wanted = _FIELD_TYPES[str(item.type)]
            if isinstance(value, wanted) and not isinstance(value, bool):
                kept[item.name] = value
        return cls(**kept)


# A report's field types, by their annotation, for decoding values written by any release.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "int | None": (int,),
    "float | None": (int, float),
    "str | None": (str,),
}


@dataclass(frozen=True)
class Progress:
    """A committed position, and the ids of the source and remote topics it was copied between (when known).

    A topic id that differs from the one a topic has now means the topic was deleted and made again, so the
    position is no longer about the records in it.
    """

    next_offset: int
    source_topic_id: str | None = None
    remote_topic_id: str | None = None
    report: CopyReport | None = None
    leader_epoch: int | None = None  # the source leader epoch of the last batch fetched (KIP-320 validation)
    written_ms: int | None = field(default=None, compare=False)  # when the task committed it (not part of the position)


def encode_progress(
    next_offset: int,
    *,
    source_topic_id: str | None = None,
    remote_topic_id: str | None = None,
    report: CopyReport | None = None,
    leader_epoch: int | None = None,
) -> bytes:
    """The value: the next source offset to copy, when it was committed, the topic ids and the task's report."""
    value: dict[str, object] = {"next_offset": next_offset, "ts": int(time.time() * 1000)}
    if source_topic_id:
        value["source_topic_id"] = source_topic_id
    if remote_topic_id:
        value["remote_topic_id"] = remote_topic_id
    if report is not None:
        value["report"] = report.encode()
    if leader_epoch is not None and leader_epoch >= 0:
        value["leader_epoch"] = leader_epoch
    return json.dumps(value, separators=(",", ":")).encode()


def decode_progress_record(raw: bytes) -> Progress:
    """A progress value with its topic ids; CodecError if malformed (ids are optional: older values lack them)."""
    try:
        value = json.loads(raw)
        offset = value["next_offset"]
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise CodecError(f"progress value has no next_offset: {raw[:80]!r}") from exc
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise CodecError(f"progress next_offset is not a non-negative integer: {offset!r}")
    ids = [value.get(name) for name in ("source_topic_id", "remote_topic_id")]
    source_id, remote_id = (item if isinstance(item, str) and item else None for item in ids)
    epoch = value.get("leader_epoch")
    epoch = epoch if isinstance(epoch, int) and not isinstance(epoch, bool) and epoch >= 0 else None
    written = value.get("ts")
    written = written if isinstance(written, int) and not isinstance(written, bool) else None
    return Progress(offset, source_id, remote_id, CopyReport.decode(value.get("report")), epoch, written)


def decode_progress(raw: bytes) -> int:
    """The next source offset in a progress value; CodecError if malformed."""
    return decode_progress_record(raw).next_offset
