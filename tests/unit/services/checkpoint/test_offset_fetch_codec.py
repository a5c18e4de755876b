"""The hand-written OffsetFetch v8 codec that checkpoint reads group offsets with agrees with Kafka's schema."""

from __future__ import annotations

from io import BytesIO
from typing import Any

from shared.kafka.group_protocol import OffsetFetchRequest_v8, OffsetFetchResponse_v8

GROUPS: list[Any] = [
    (
        "orders-consumers",
        [
            ("orders", [(0, 150, 3, "", 0, {}), (1, 37, -1, None, 0, {}), (2, -1, -1, "", 0, {})]),
            ("payments", [(0, 2**40, 7, "meta\x00", 0, {5: b"\x01\x02"})]),
        ],
        0,
        {},
    ),
    ("empty-group", [], 0, {}),
    ("not-mine", [], 16, {}),
    ("ünïcode-grüppe", [("tôpic", [(7, 1, 0, "mé", 88, {})])], 0, {}),
]


def response_bytes() -> bytes:
    """Encode with aiokafka's generic schema, as a broker's bytes would look."""
    groups: list[Any] = [(g, [(t, parts, {}) for t, parts in topics], error, tags) for g, topics, error, tags in GROUPS]
    encoded: bytes = OffsetFetchResponse_v8.SCHEMA.encode([25, groups, {}])
    return encoded


def test_the_fast_decoder_reads_what_the_schema_writes() -> None:
    data = response_bytes()
    reader = BytesIO(data)
    expected = [field.decode(reader) for field in OffsetFetchResponse_v8.SCHEMA.fields]
    fast = OffsetFetchResponse_v8.decode(BytesIO(data))
    assert fast.throttle_time_ms == expected[0] == 25
    strip = [(g, [(t, [p[:5] for p in parts]) for t, parts, _ in topics], error) for g, topics, error, _ in expected[1]]
    mine = [(g, [(t, [p[:5] for p in parts]) for t, parts, _ in topics], error) for g, topics, error, _ in fast.groups]
    assert mine == strip
    assert mine[0][1][1] == ("payments", [(0, 2**40, 7, "meta\x00", 0)])


def test_the_fast_encoder_writes_what_the_schema_writes() -> None:
    groups: list[Any] = [("a", None, {}), ("grüppe-" + "x" * 200, None, {}), ("", None, {})]
    for require_stable in (False, True):
        request = OffsetFetchRequest_v8(groups, require_stable, {})
        assert request.encode() == OffsetFetchRequest_v8.SCHEMA.encode([groups, require_stable, {}])
    with_topics: list[Any] = [("a", [("t", [0, 1], {})], {})]
    assert OffsetFetchRequest_v8(with_topics, False, {}).encode() == OffsetFetchRequest_v8.SCHEMA.encode(
        [with_topics, False, {}]
    )
