"""Kafka group-coordination requests aiokafka lacks: batched FindCoordinator v4 (KIP-699) and OffsetFetch v8
(KIP-709, many groups per request), with a hand-written decoder for the large OffsetFetch answers.

Schemas follow Kafka's FindCoordinatorRequest/Response.json and OffsetFetchRequest/Response.json.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int8,
    Int16,
    Int32,
    Int64,
    Schema,
    TaggedFields,
)

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION_HEAD = struct.Struct(">iqi")  # partition_index, committed_offset, committed_leader_epoch


class FindCoordinatorResponse_v4(Response):  # type: ignore[misc]
    """The coordinator of each key asked for."""

    API_KEY = 10
    API_VERSION = 4
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "coordinators",
            CompactArray(
                ("key", CompactString("utf-8")),
                ("node_id", Int32),
                ("host", CompactString("utf-8")),
                ("port", Int32),
                ("error_code", Int16),
                ("error_message", CompactString("utf-8")),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class FindCoordinatorRequest_v4(RequestStruct):  # type: ignore[misc]
    """Coordinators of many keys at once (key_type 0: consumer groups)."""

    FLEXIBLE_VERSION = True
    API_KEY = 10
    API_VERSION = 4
    RESPONSE_TYPE = FindCoordinatorResponse_v4
    SCHEMA = Schema(
        ("key_type", Int8),
        ("coordinator_keys", CompactArray(CompactString("utf-8"))),
        ("tags", TaggedFields),
    )


class FindGroupCoordinators(Request[FindCoordinatorRequest_v4]):  # type: ignore[misc]
    """Ask for the coordinators of `groups`."""

    API_KEY = 10

    def __init__(self, groups: list[str]) -> None:
        self._groups = groups

    def build(self, request_struct_class: type[FindCoordinatorRequest_v4]) -> FindCoordinatorRequest_v4:
        return request_struct_class(0, self._groups, {})


class OffsetFetchResponse_v8(Response):  # type: ignore[misc]
    """Committed offsets per group, topic and partition."""

    API_KEY = 9
    API_VERSION = 8
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "groups",
            CompactArray(
                ("group_id", CompactString("utf-8")),
                (
                    "topics",
                    CompactArray(
                        ("name", CompactString("utf-8")),
                        (
                            "partitions",
                            CompactArray(
                                ("partition_index", Int32),
                                ("committed_offset", Int64),
                                ("committed_leader_epoch", Int32),
                                ("metadata", CompactString("utf-8")),
                                ("error_code", Int16),
                                ("tags", TaggedFields),
                            ),
                        ),
                        ("tags", TaggedFields),
                    ),
                ),
                ("error_code", Int16),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )

    @classmethod
    def decode(cls, data: BytesIO | bytes) -> OffsetFetchResponse_v8:
        """Parse by hand: the generic decoder takes seconds for 10,000 groups, this takes milliseconds."""
        raw = data.read() if isinstance(data, BytesIO) else data
        throttle_time_ms, groups = parse_offset_fetch_v8(raw)
        return cls(throttle_time_ms, groups, {})


class OffsetFetchRequest_v8(RequestStruct):  # type: ignore[misc]
    """Committed offsets of many groups at once."""

    FLEXIBLE_VERSION = True
    API_KEY = 9
    API_VERSION = 8
    RESPONSE_TYPE = OffsetFetchResponse_v8
    SCHEMA = Schema(
        (
            "groups",
            CompactArray(
                ("group_id", CompactString("utf-8")),
                (
                    "topics",
                    CompactArray(
                        ("name", CompactString("utf-8")),
                        ("partition_indexes", CompactArray(Int32)),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("require_stable", Boolean),
        ("tags", TaggedFields),
    )

    def encode(self) -> bytes:
        """Encode by hand for the shape FetchGroupOffsets builds (every group with topics=None)."""
        groups: list[tuple[str, Any, Any]] = self.groups
        if any(topics is not None for _, topics, _ in groups):
            encoded: bytes = super().encode()
            return encoded
        parts = [_encode_uvarint(len(groups) + 1)]
        for group_id, _, _ in groups:
            name = group_id.encode("utf-8")
            parts += [_encode_uvarint(len(name) + 1), name, b"\x00\x00"]  # topics: null; no tagged fields
        parts.append(b"\x01\x00" if self.require_stable else b"\x00\x00")
        return b"".join(parts)


class FetchGroupOffsets(Request[OffsetFetchRequest_v8]):  # type: ignore[misc]
    """Ask for every committed offset of `groups` (all topics)."""

    API_KEY = 9

    def __init__(self, groups: list[str]) -> None:
        self._groups = groups

    def build(self, request_struct_class: type[OffsetFetchRequest_v8]) -> OffsetFetchRequest_v8:
        # topics=None: every partition the group has an offset for.
        return request_struct_class([(group, None, {}) for group in self._groups], False, {})


def _encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _compact_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    size, pos = _uvarint(buf, pos)
    if size == 0:
        return None, pos
    end = pos + size - 1
    return buf[pos:end].decode("utf-8"), end


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def parse_offset_fetch_v8(buf: bytes) -> tuple[int, list[Any]]:
    """(throttle_time_ms, groups) shaped as the schema's nested tuples."""
    (throttle_time_ms,) = _INT32.unpack_from(buf, 0)
    pos = 4
    group_count, pos = _uvarint(buf, pos)
    groups: list[Any] = []
    for _ in range(group_count - 1):
        group_id, pos = _compact_string(buf, pos)
        topic_count, pos = _uvarint(buf, pos)
        topics: list[Any] = []
        for _ in range(max(topic_count - 1, 0)):
            name, pos = _compact_string(buf, pos)
            partition_count, pos = _uvarint(buf, pos)
            partitions: list[Any] = []
            for _ in range(max(partition_count - 1, 0)):
                partition, offset, epoch = _PARTITION_HEAD.unpack_from(buf, pos)
                metadata, pos = _compact_string(buf, pos + _PARTITION_HEAD.size)
                (error_code,) = _INT16.unpack_from(buf, pos)
                pos = _skip_tags(buf, pos + 2)
                partitions.append((partition, offset, epoch, metadata, error_code, {}))
            pos = _skip_tags(buf, pos)
            topics.append((name, partitions, {}))
        (error_code,) = _INT16.unpack_from(buf, pos)
        pos = _skip_tags(buf, pos + 2)
        groups.append((group_id, topics, error_code, {}))
    return throttle_time_ms, groups
