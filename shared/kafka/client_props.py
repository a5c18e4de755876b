"""Translate Java-client property names (as MM2 configs hold them) into librdkafka and aiokafka settings.

Settings with no equivalent are returned in `ignored`, so a service can say so once instead of silently
dropping a user's override (a common MM2 complaint).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.errors import ConfigError
from shared.kafka.tls_settings import librdkafka_tls, ssl_context
from shared.kafka.tls_stores import TLS_KEYS, uses_tls

# Same name and meaning in librdkafka.
_SAME_IN_LIBRDKAFKA = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "security.protocol",
        "sasl.mechanism",
        "group.id",
        "auto.offset.reset",
        "isolation.level",
        "enable.auto.commit",
        "auto.commit.interval.ms",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "max.partition.fetch.bytes",
        "acks",
        "compression.type",
        "linger.ms",
        "batch.size",
        "enable.idempotence",
        "max.in.flight.requests.per.connection",
        "transactional.id",
        "transaction.timeout.ms",
        "request.timeout.ms",
        "delivery.timeout.ms",
        "retries",
        "retry.backoff.ms",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "metadata.max.age.ms",
        "socket.connection.setup.timeout.ms",
        "connections.max.idle.ms",
        "partition.assignment.strategy",
        "group.instance.id",
        "client.rack",
        "batch.num.messages",
        "queue.buffering.max.messages",
        "queue.buffering.max.kbytes",
        "statistics.interval.ms",
        "group.protocol",
        "compression.level",
        "check.crcs",
    }
)
# Java name -> librdkafka name, where only the name differs.
_RENAMED_FOR_LIBRDKAFKA = {
    "fetch.max.wait.ms": "fetch.wait.max.ms",
    "max.request.size": "message.max.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}
# librdkafka settings that only one kind of client takes (an admin client is a producer inside). A flow hands
# every client of a cluster the same settings, so the other kind's are left out rather than warned about.
LIBRDKAFKA_CONSUMER_ONLY = frozenset(
    {
        "group.id",
        "group.instance.id",
        "group.protocol",
        "partition.assignment.strategy",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "auto.offset.reset",
        "isolation.level",
        "enable.auto.commit",
        "auto.commit.interval.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "fetch.wait.max.ms",
        "check.crcs",
    }
)
LIBRDKAFKA_PRODUCER_ONLY = frozenset(
    {
        "acks",
        "batch.size",
        "batch.num.messages",
        "enable.idempotence",
        "queue.buffering.max.kbytes",
        "queue.buffering.max.messages",
        "request.timeout.ms",
        "retries",
        "transactional.id",
        "transaction.timeout.ms",
        "compression.level",
    }
)
_SOCKET_BUFFERS = frozenset({"receive.buffer.bytes", "send.buffer.bytes"})
# Java-only settings that have no meaning for our byte-array clients, or that are translated on their own
# (the JAAS line, the TLS stores): dropped without a warning.
_SILENTLY_DROPPED = frozenset(
    {
        "key.serializer",
        "value.serializer",
        "key.deserializer",
        "value.deserializer",
        "sasl.jaas.config",
        "max.poll.records",
        "exclude.internal.topics",
        "allow.auto.create.topics",
        *TLS_KEYS,
    }
)
# A JAAS option: name = "quoted value" (backslash escapes) or name = bare-word.
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')
# Java's StreamTokenizer escapes inside a quoted JAAS value.
_JAAS_ESCAPE = re.compile(r"\\([0-3][0-7]{0,2}|[4-7][0-7]?|.)", re.DOTALL)
_JAAS_ESCAPED_CHARS = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


@dataclass(frozen=True)
class ClientProps:
    """Translated settings plus the user's settings that the client cannot honour."""

    settings: dict[str, Any]
    ignored: tuple[str, ...] = field(default=())


def jaas_credentials(jaas: str) -> tuple[str, str]:
    """Username and password from a PLAIN or SCRAM `sasl.jaas.config` line (escapes read as the JVM reads them)."""
    options = {name: bare or _unescape(quoted) for name, quoted, bare in _JAAS_OPTION.findall(jaas)}
    if "username" not in options or "password" not in options:
        raise ConfigError(
            'sasl.jaas.config needs username="..." and password="..." (PLAIN or SCRAM login module)',
            key="sasl.jaas.config",
            value="<redacted>",
        )
    return options["username"], options["password"]


def _unescape(quoted: str) -> str:
    """A quoted JAAS value with `\\"`, `\\\\`, `\\n`, octal and other escapes resolved."""

    def one(match: re.Match[str]) -> str:
        escaped = match.group(1)
        if escaped[0] in "01234567":
            return chr(int(escaped, 8))
        return _JAAS_ESCAPED_CHARS.get(escaped, escaped)

    return _JAAS_ESCAPE.sub(one, quoted)


def to_librdkafka(props: Mapping[str, str]) -> ClientProps:
    """Java client properties -> confluent-kafka (librdkafka) configuration."""
    out: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in props.items():
        if key in _SAME_IN_LIBRDKAFKA:
            out[key] = value
        elif key in _SOCKET_BUFFERS:
            # Java's -1 is "the operating system's default", librdkafka's 0 (which refuses -1)
            out[_RENAMED_FOR_LIBRDKAFKA[key]] = "0" if value.strip() == "-1" else value
        elif key in _RENAMED_FOR_LIBRDKAFKA:
            out[_RENAMED_FOR_LIBRDKAFKA[key]] = value
        elif key == "buffer.memory":
            out["queue.buffering.max.kbytes"] = str(max(1, int(value) // 1024))
        elif key not in _SILENTLY_DROPPED:
            ignored.append(key)
    if "sasl.jaas.config" in props:
        out["sasl.username"], out["sasl.password"] = jaas_credentials(props["sasl.jaas.config"])
    out |= librdkafka_tls(props)
    return ClientProps(out, tuple(sorted(ignored)))


_AIOKAFKA_NAMES = {
    "bootstrap.servers": "bootstrap_servers",
    "client.id": "client_id",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "group.id": "group_id",
    "auto.offset.reset": "auto_offset_reset",
    "enable.auto.commit": "enable_auto_commit",
    "isolation.level": "isolation_level",
    "request.timeout.ms": "request_timeout_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "session.timeout.ms": "session_timeout_ms",
    "heartbeat.interval.ms": "heartbeat_interval_ms",
    "max.poll.interval.ms": "max_poll_interval_ms",
    "fetch.max.wait.ms": "fetch_max_wait_ms",
    "fetch.max.bytes": "fetch_max_bytes",
    "fetch.min.bytes": "fetch_min_bytes",
    "max.partition.fetch.bytes": "max_partition_fetch_bytes",
    "max.poll.records": "max_poll_records",
    "acks": "acks",
    "compression.type": "compression_type",
    "linger.ms": "linger_ms",
    "batch.size": "max_batch_size",
    "max.request.size": "max_request_size",
    "enable.idempotence": "enable_idempotence",
    "transactional.id": "transactional_id",
    "retry.backoff.ms": "retry_backoff_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
}
_AIOKAFKA_INTS = frozenset(k for k, v in _AIOKAFKA_NAMES.items() if v.endswith(("_ms", "_bytes", "_size", "_records")))
_AIOKAFKA_BOOLS = frozenset({"enable.idempotence", "enable.auto.commit"})
# Settings that aiokafka's consumer, producer or admin constructors do not all take.
AIOKAFKA_CONSUMER_ONLY = frozenset(
    {
        "group_id",
        "auto_offset_reset",
        "enable_auto_commit",
        "isolation_level",
        "session_timeout_ms",
        "heartbeat_interval_ms",
        "max_poll_interval_ms",
        "fetch_max_wait_ms",
        "fetch_max_bytes",
        "fetch_min_bytes",
        "max_partition_fetch_bytes",
        "max_poll_records",
    }
)
AIOKAFKA_PRODUCER_ONLY = frozenset(
    {
        "acks",
        "compression_type",
        "linger_ms",
        "max_batch_size",
        "max_request_size",
        "enable_idempotence",
        "transactional_id",
    }
)


def to_aiokafka(props: Mapping[str, str]) -> ClientProps:
    """Java client properties -> aiokafka constructor keyword arguments (role-specific keys included)."""
    out: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in props.items():
        name = _AIOKAFKA_NAMES.get(key)
        if name is None:
            if key not in _SILENTLY_DROPPED:
                ignored.append(key)
            continue
        if key in _AIOKAFKA_INTS:
            out[name] = int(value)
        elif key in _AIOKAFKA_BOOLS:
            out[name] = value.strip().lower() == "true"
        elif key == "acks":
            out[name] = "all" if value in ("all", "-1") else int(value)
        elif key == "compression.type":
            # aiokafka spells "no compression" as None; Java and librdkafka say "none"
            out[name] = None if value.strip().lower() == "none" else value.strip().lower()
        else:
            out[name] = value
    if "sasl.jaas.config" in props:
        out["sasl_plain_username"], out["sasl_plain_password"] = jaas_credentials(props["sasl.jaas.config"])
    if uses_tls(props):
        out["ssl_context"] = ssl_context(props)
    return ClientProps(out, tuple(sorted(ignored)))
