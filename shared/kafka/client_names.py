"""The `client.id` each Kafka client sends unless the user set one: the process, what the client is for, its role.

Brokers log requests, apply client quotas and list group members by client id. librdkafka's default ("rdkafka")
and aiokafka's ("aiokafka-<version>") make Strait's clients indistinguishable from each other and from any other
application; MM2 names each of its clients (`A->B|MirrorSourceConnector-0|replication-consumer`), and so do we:
`strait-data-mirror|A->B|task-0|consumer`.
"""

from __future__ import annotations

_process = "strait"


def name_process(name: str) -> None:
    """Every client this process builds from now on starts its id with `name` (the runner calls it first)."""
    global _process
    _process = name


def client_id(role: str, *purpose: str | None) -> str:
    """The id of a client in `role` (consumer, producer, admin, client) for `purpose` (e.g. "A->B|task-0",
    "offset-syncs"; parts that are None are left out)."""
    return "|".join(part for part in (_process, *purpose, role) if part)
