"""Heartbeat records of the `heartbeats` topic, byte-compatible with MM2."""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import CodecError
from shared.records.primitives import Reader, encode_int16, encode_int64, encode_string

HEARTBEAT_VERSION = 0


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A liveness beacon for the flow source -> target.

    Key: sourceClusterAlias STRING, targetClusterAlias STRING. Value: version INT16 (0), timestamp INT64.
    """

    source_alias: str
    target_alias: str
    timestamp_ms: int

    def record_key(self) -> bytes:
        """Encode the record key exactly as MM2 does."""
        return encode_string(self.source_alias, "sourceClusterAlias") + encode_string(
            self.target_alias, "targetClusterAlias"
        )

    def record_value(self) -> bytes:
        """Encode the record value (version 0) exactly as MM2 does."""
        return encode_int16(HEARTBEAT_VERSION, "version") + encode_int64(self.timestamp_ms, "timestamp")

    @classmethod
    def decode(cls, key: bytes, value: bytes) -> Heartbeat:
        """Decode a record; raises CodecError on bad bytes or a version other than 0."""
        value_reader = Reader(value, "Heartbeat value")
        version = value_reader.read_int16("version")
        if version != HEARTBEAT_VERSION:
            raise CodecError(f"Heartbeat value: unsupported version {version} (only {HEARTBEAT_VERSION})")
        timestamp = value_reader.read_int64("timestamp")
        value_reader.finish()
        key_reader = Reader(key, "Heartbeat key")
        source = key_reader.read_string("sourceClusterAlias")
        target = key_reader.read_string("targetClusterAlias")
        key_reader.finish()
        return cls(source, target, timestamp)
