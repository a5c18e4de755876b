"""Progress records are readable JSON and malformed ones are rejected with a reason."""

from __future__ import annotations

import json

import pytest

from services.data_mirror.progress import (
    Progress,
    ProgressKey,
    decode_progress,
    decode_progress_record,
    encode_progress,
)
from shared.errors import CodecError


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
