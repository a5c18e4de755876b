"""Codecs for MM2's internal records (OffsetSync, Checkpoint, Heartbeat), byte-compatible with MM2."""

from shared.records.checkpoint import CHECKPOINT_VERSION, Checkpoint
from shared.records.heartbeat import HEARTBEAT_VERSION, Heartbeat
from shared.records.offset_sync import OffsetSync

__all__ = ["CHECKPOINT_VERSION", "HEARTBEAT_VERSION", "Checkpoint", "Heartbeat", "OffsetSync"]
