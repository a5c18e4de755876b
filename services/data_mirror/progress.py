"""data-mirror's progress records on `strait.offsets.<source>.internal`: next source offset per partition.

Key and value are compact JSON so operators can read them with any console consumer.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Progress:
    """A committed position, and the ids of the source and remote topics it was copied between (when known).

    A topic id that differs from the one a topic has now means the topic was deleted and made again, so the
    position is no longer about the records in it.
    """

    next_offset: int
    source_topic_id: str | None = None
    remote_topic_id: str | None = None


def encode_progress(
    next_offset: int, *, source_topic_id: str | None = None, remote_topic_id: str | None = None
) -> bytes:
    """The value: the next source offset to copy, when it was committed and the topic ids it refers to."""
    value: dict[str, object] = {"next_offset": next_offset, "ts": int(time.time() * 1000)}
    if source_topic_id:
        value["source_topic_id"] = source_topic_id
    if remote_topic_id:
        value["remote_topic_id"] = remote_topic_id
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
    return Progress(offset, source_id, remote_id)


def decode_progress(raw: bytes) -> int:
    """The next source offset in a progress value; CodecError if malformed."""
    return decode_progress_record(raw).next_offset
