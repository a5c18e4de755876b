"""The one name for a (topic, partition) pair as Strait's own code keys its maps by it.

Not a client's class: confluent-kafka's and aiokafka's `TopicPartition` are objects with an offset or fields of
their own, built only where a client is called."""

from __future__ import annotations

PartitionKey = tuple[str, int]
