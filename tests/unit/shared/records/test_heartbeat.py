"""Heartbeat codec: MM2's serde vector, exact bytes, versions and malformed input."""

from __future__ import annotations

import pytest

from shared.errors import CodecError
from shared.records import HEARTBEAT_VERSION, Heartbeat


def test_mm2_serde_vector() -> None:
    heartbeat = Heartbeat("source-1", "target-2", 1234567890)
    assert Heartbeat.decode(heartbeat.record_key(), heartbeat.record_value()) == heartbeat


def test_exact_bytes() -> None:
    heartbeat = Heartbeat("A", "B", 1234567890)
    assert heartbeat.record_key() == b"\x00\x01A\x00\x01B"
    assert heartbeat.record_value() == bytes.fromhex("0000 00000000499602d2")
    assert HEARTBEAT_VERSION == 0


@pytest.mark.parametrize(
    "heartbeat",
    [Heartbeat("eu-west", "us-east", 0), Heartbeat("zürich", "東京", 1_700_000_000_000), Heartbeat("", "", -5)],
)
def test_round_trip(heartbeat: Heartbeat) -> None:
    assert Heartbeat.decode(heartbeat.record_key(), heartbeat.record_value()) == heartbeat


def test_unknown_version_is_rejected() -> None:
    heartbeat = Heartbeat("A", "B", 1)
    with pytest.raises(CodecError, match="Heartbeat value: unsupported version 7"):
        Heartbeat.decode(heartbeat.record_key(), b"\x00\x07" + heartbeat.record_value()[2:])


def test_truncated_and_trailing() -> None:
    heartbeat = Heartbeat("A", "B", 1)
    with pytest.raises(CodecError, match="field 'timestamp'"):
        Heartbeat.decode(heartbeat.record_key(), heartbeat.record_value()[:5])
    with pytest.raises(CodecError, match="field 'targetClusterAlias'"):
        Heartbeat.decode(heartbeat.record_key()[:3], heartbeat.record_value())
    with pytest.raises(CodecError, match="Heartbeat key: 1 unexpected trailing bytes"):
        Heartbeat.decode(heartbeat.record_key() + b"!", heartbeat.record_value())
