"""A Fetch v11 response read with every partition's records as a view of the frame: the same fields as aiokafka's
decoder reads, and no copy of the records."""

from __future__ import annotations

from io import BytesIO

import pytest
from aiokafka.protocol.fetch import FetchResponse_v11

from shared.kafka.fetch_response import ViewFetchResponse_v11

PARTITIONS = [
    (0, 0, 120, 118, 3, None, -1, b"\x00" * 70 + b"records of partition 0"),
    (4, 1, -1, -1, -1, [(9_001, 40), (9_002, 77)], -1, None),  # an error, aborted transactions, no records
    (7, 0, 5, 5, 0, [], 2, b""),
]


def _frame() -> bytes:
    header = b"\x00\x00\x00\x2a"  # the correlation id aiokafka reads before the body
    body: bytes = FetchResponse_v11(25, 0, 5_150, [("orders", PARTITIONS[:2]), ("événements", PARTITIONS[2:])]).encode()
    return header + body


def test_the_fields_are_aiokafkas_and_the_records_are_views_of_the_frame() -> None:
    frame = _frame()
    theirs = FetchResponse_v11.decode(BytesIO(frame[4:]))
    read = BytesIO(frame)
    read.read(4)  # (aiokafka reads the response header first)
    ours = ViewFetchResponse_v11.decode(read)
    assert (ours.throttle_time_ms, ours.error_code, ours.session_id) == (25, 0, 5_150)

    def plain(response: FetchResponse_v11) -> list[object]:
        return [
            (topic, [(*p[:-1], None if p[-1] is None else bytes(p[-1])) for p in partitions])
            for topic, partitions in response.topics
        ]

    assert plain(ours) == plain(theirs)
    views = [p[-1] for _, partitions in ours.topics for p in partitions if p[-1] is not None]
    assert all(isinstance(view, memoryview) and view.obj is frame for view in views)
    assert "ViewFetchResponse_v11" in repr(ours)


def test_a_response_cut_short_is_an_error_not_a_short_record_set() -> None:
    frame = _frame()
    with pytest.raises(ValueError, match="underrun"):
        ViewFetchResponse_v11.decode(frame[4:-30])
