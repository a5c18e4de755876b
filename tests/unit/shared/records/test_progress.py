"""Progress records are readable JSON and malformed ones are rejected with a reason."""

from __future__ import annotations

import json

import pytest

from shared.errors import CodecError
from shared.records.progress import (
    CopyReport,
    Progress,
    ProgressKey,
    decode_progress,
    decode_progress_record,
    encode_progress,
)


def test_key_and_value_round_trip() -> None:
    key = ProgressKey("A->B", "orders", 3)
    assert ProgressKey.decode(key.encode()) == key
    assert json.loads(key.encode()) == ["A->B", "orders", 3]
    assert decode_progress(encode_progress(1234)) == 1234


@pytest.mark.parametrize("raw", [b"nope", b'{"flow": 1}', b'["A->B", "orders", "3"]'])
def test_foreign_keys_are_refused(raw: bytes) -> None:
    with pytest.raises(CodecError, match="progress key"):
        ProgressKey.decode(raw)


@pytest.mark.parametrize("raw", [b"{}", b'{"next_offset": -1}', b'{"next_offset": "7"}', b"[]"])
def test_bad_values_are_refused(raw: bytes) -> None:
    with pytest.raises(CodecError, match="next_offset"):
        decode_progress(raw)


def test_topic_ids_travel_with_the_offset_and_older_values_have_none() -> None:
    raw = encode_progress(77, source_topic_id="src-id", remote_topic_id="dst-id")
    assert decode_progress_record(raw) == Progress(77, "src-id", "dst-id")
    assert decode_progress(raw) == 77
    assert decode_progress_record(b'{"next_offset": 5, "ts": 1}') == Progress(5)
    assert decode_progress_record(encode_progress(9)) == Progress(9)


def test_a_report_travels_with_the_position_and_keeps_an_offset_of_zero() -> None:
    report = CopyReport(records=3, bytes=30, end_offset=0, blocked_offset=0, blocked_reason="INVALID_TIMESTAMP")
    decoded = decode_progress_record(encode_progress(0, report=report)).report
    assert decoded == report
    assert "expired" not in json.loads(encode_progress(0, report=report))["report"], "zero counts are left out"


def test_a_malformed_report_is_dropped_not_fatal() -> None:
    odd = b'{"next_offset": 5, "report": {"records": "x", "bytes": 7, "blocked_offset": true, "bogus": 1}}'
    assert decode_progress_record(odd).report == CopyReport(bytes=7), "fields of the wrong type are left out"
    assert decode_progress_record(b'{"next_offset": 5, "report": [1, 2]}') == Progress(5)


def test_the_leader_epoch_travels_with_the_position_and_a_bad_one_is_left_out() -> None:
    assert decode_progress_record(encode_progress(80, leader_epoch=3)).leader_epoch == 3
    assert decode_progress_record(encode_progress(80)).leader_epoch is None
    assert decode_progress_record(b'{"next_offset": 80, "leader_epoch": "3"}').leader_epoch is None
    assert decode_progress_record(b'{"next_offset": 80, "leader_epoch": true}').leader_epoch is None
