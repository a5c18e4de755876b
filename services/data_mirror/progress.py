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
        except (ValueError, TypeError) as exc:
            raise CodecError(f"progress key is not [flow, topic, partition]: {raw[:80]!r}") from exc
        if not (isinstance(flow, str) and isinstance(topic, str) and isinstance(partition, int)):
            raise CodecError(f"progress key has wrong types: {raw[:80]!r}")
        return cls(flow, topic, partition)


def encode_progress(next_offset: int) -> bytes:
    """The value: the next source offset to copy and when it was committed."""
    return json.dumps({"next_offset": next_offset, "ts": int(time.time() * 1000)}, separators=(",", ":")).encode()


def decode_progress(raw: bytes) -> int:
    """The next source offset in a progress value; CodecError if malformed."""
    try:
        value = json.loads(raw)["next_offset"]
    except (ValueError, TypeError, KeyError) as exc:
        raise CodecError(f"progress value has no next_offset: {raw[:80]!r}") from exc
    if not isinstance(value, int) or value < 0:
        raise CodecError(f"progress next_offset is not a non-negative integer: {value!r}")
    return value
