"""The Fetch v11 response read without copying its records: each partition's record set is a view of the frame.

aiokafka decodes a response field by field from a BytesIO, and each partition's records come out as new bytes: a
fetch of many partitions was held twice while it was decoded (the frame, then the copies). Here the frame aiokafka
read is taken as it is (`BytesIO.getvalue()` hands back the bytes it was made from) and every record set is a
memoryview of it; the frame lives while any of them does. The fields and their order are Kafka's Fetch v11
response (no tagged fields before v12), as aiokafka's `FetchResponse_v11` declares them.
"""

from __future__ import annotations

import struct
from io import BytesIO
from typing import Any

from aiokafka.protocol.fetch import FetchRequest_v11, FetchResponse_v11

_PARTITION_HEAD = struct.Struct(">ihqqq")  # partition, error code, high watermark, last stable offset, log start
_ABORTED = struct.Struct(">qq")  # producer id, first offset
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_RESPONSE_HEAD = struct.Struct(">ihi")  # throttle time, error code, session id


class _Cursor:
    """Reads big-endian fields from a view of the frame, moving on as it goes."""

    def __init__(self, frame: memoryview, at: int) -> None:
        self.frame, self.at = frame, at

    def take(self, layout: struct.Struct) -> tuple[Any, ...]:
        try:
            values = layout.unpack_from(self.frame, self.at)
        except struct.error as exc:
            raise ValueError(f"Buffer underrun decoding a Fetch response at byte {self.at}") from exc
        self.at += layout.size
        return values

    def int32(self) -> int:
        return int(self.take(_INT32)[0])

    def string(self) -> str:
        length = int(self.take(_INT16)[0])
        if length < 0:
            return ""
        text = bytes(self.frame[self.at : self.at + length]).decode("utf-8")
        self.at += length
        return text

    def records(self) -> memoryview | None:
        length = self.int32()
        if length < 0:
            return None
        if self.at + length > len(self.frame):
            raise ValueError("Buffer underrun decoding a Fetch response's records")
        view = self.frame[self.at : self.at + length]
        self.at += length
        return view


class ViewFetchResponse_v11(FetchResponse_v11):  # type: ignore[misc]  # (Kafka's names, as aiokafka's)
    """FetchResponse_v11 whose partitions' last field (the records) is a memoryview of the response frame."""

    @classmethod
    def decode(cls, data: BytesIO | bytes) -> ViewFetchResponse_v11:
        if isinstance(data, BytesIO):
            cursor = _Cursor(memoryview(data.getvalue()), data.tell())
        else:
            cursor = _Cursor(memoryview(data), 0)
        throttle_ms, error_code, session_id = cursor.take(_RESPONSE_HEAD)
        topics = []
        for _ in range(cursor.int32()):
            topic = cursor.string()
            partitions = []
            for _ in range(cursor.int32()):
                head = cursor.take(_PARTITION_HEAD)
                count = cursor.int32()
                aborted = None if count < 0 else [cursor.take(_ABORTED) for _ in range(count)]
                preferred_replica = cursor.int32()
                partitions.append((*head, aborted, preferred_replica, cursor.records()))
            topics.append((topic, partitions))
        return cls(throttle_ms, error_code, session_id, topics)

    def __repr__(self) -> str:  # (aiokafka's debug log; the records would not print as bytes)
        return f"ViewFetchResponse_v11(error_code={self.error_code}, session_id={self.session_id}, ...)"


class ViewFetchRequest_v11(FetchRequest_v11):  # type: ignore[misc]
    """FetchRequest_v11, answered with `ViewFetchResponse_v11`."""

    RESPONSE_TYPE = ViewFetchResponse_v11
