"""No Strait client ever asks a broker to create a topic: a deleted topic must stay deleted.

On a broker with Apache Kafka's default `auto.create.topics.enable=true`, a metadata request that names a missing
topic and allows auto-creation makes the broker create it with its default partition count and replication
factor. librdkafka's producers allow it unless told not to (`allow.auto.create.topics`); aiokafka always allows it
(its MetadataRequest sends `allow_auto_topic_creation=True` on v4+ and has no setting). A mirror asks for the
metadata of every topic it copies, so a topic deleted on the source came back there with one partition, and a
remote topic could be created on the target before topic-sync made it with the source's partitions.

`shared.kafka.factories` builds every client: librdkafka clients get `allow.auto.create.topics=false`, and
importing this module makes aiokafka's metadata requests say False (aiokafka's client and admin modules look the
request class up by name when they send one).
"""

from __future__ import annotations

import aiokafka.admin.client
import aiokafka.client
from aiokafka.protocol.metadata import MetadataRequest

LIBRDKAFKA_NO_AUTO_CREATE = {"allow.auto.create.topics": False}


class MetadataRequestWithoutAutoCreate(MetadataRequest):  # type: ignore[misc]
    """aiokafka's MetadataRequest with topic auto-creation off unless a caller asks for it."""

    def __init__(self, topics: list[str] | None = None, allow_auto_topic_creation: bool | None = False) -> None:
        super().__init__(topics, bool(allow_auto_topic_creation))


def install() -> None:
    """Make every aiokafka client in this process send metadata requests without auto-creation (idempotent)."""
    aiokafka.client.MetadataRequest = MetadataRequestWithoutAutoCreate
    aiokafka.admin.client.MetadataRequest = MetadataRequestWithoutAutoCreate


install()
