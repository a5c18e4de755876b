"""Codecs for MM2's internal records (OffsetSync, Checkpoint, Heartbeat, Connect offsets), byte-compatible with MM2,
and for Strait's own progress records."""

from shared.records.checkpoint import CHECKPOINT_VERSION, Checkpoint
from shared.records.heartbeat import HEARTBEAT_VERSION, Heartbeat
from shared.records.offset_sync import OffsetSync

__all__ = ["CHECKPOINT_VERSION", "HEARTBEAT_VERSION", "Checkpoint", "Heartbeat", "OffsetSync"]
