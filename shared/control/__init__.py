"""Coordination between services: control-topic events, their versioned codec and Strait's topic names."""

from shared.control.codec import decode_event, encode_event
from shared.control.events import (
    ConfigChanged,
    ControlEvent,
    FlowPaused,
    FlowResumed,
    RemoteTopic,
    ServiceStatus,
    TopicsChanged,
)
from shared.control.topic_names import CONTROL_TOPIC, STATUS_TOPIC, progress_topic

__all__ = [
    "CONTROL_TOPIC",
    "STATUS_TOPIC",
    "ConfigChanged",
    "ControlEvent",
    "FlowPaused",
    "FlowResumed",
    "RemoteTopic",
    "ServiceStatus",
    "TopicsChanged",
    "decode_event",
    "encode_event",
    "progress_topic",
]
