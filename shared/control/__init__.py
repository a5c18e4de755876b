"""Coordination between services: control-topic events, their versioned codec and Strait's topic names."""

from shared.control.channel import ControlPublisher, ensure_control_topics, event_key, follow_events
from shared.control.codec import decode_event, encode_event
from shared.control.events import (
    ConfigChanged,
    ControlEvent,
    FlowPaused,
    FlowResumed,
    MirrorHandover,
    RemoteTopic,
    ServiceStatus,
    TopicsChanged,
)
from shared.control.status_reader import read_statuses
from shared.control.status_reporter import StatusReporter
from shared.control.topic_names import CONTROL_TOPIC, STATUS_TOPIC, progress_topic

__all__ = [
    "CONTROL_TOPIC",
    "STATUS_TOPIC",
    "ConfigChanged",
    "ControlEvent",
    "ControlPublisher",
    "FlowPaused",
    "FlowResumed",
    "MirrorHandover",
    "RemoteTopic",
    "ServiceStatus",
    "StatusReporter",
    "TopicsChanged",
    "decode_event",
    "encode_event",
    "ensure_control_topics",
    "event_key",
    "follow_events",
    "progress_topic",
    "read_statuses",
]
