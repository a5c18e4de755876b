"""Kafka protocol error codes, named once, for the code that speaks the protocol itself (batch forwarding, fetch
sessions, leader epochs, ACL requests). They are the broker's numbers (confluent-kafka's `KafkaError` uses the same
positive values); Strait's own outcomes are never encoded in them."""

from __future__ import annotations

UNKNOWN_SERVER_ERROR = -1
NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
MESSAGE_TOO_LARGE = 10
TOPIC_AUTHORIZATION_FAILED = 29
CLUSTER_AUTHORIZATION_FAILED = 31
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
INVALID_PRODUCER_EPOCH = 47
SECURITY_DISABLED = 54
UNKNOWN_PRODUCER_ID = 59
FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
PRODUCER_FENCED = 90
UNKNOWN_TOPIC_ID = 100
