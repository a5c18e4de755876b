"""Java-style client settings from an MM2 file reach librdkafka and aiokafka with their meaning intact."""

from __future__ import annotations

import logging

import pytest

from shared.errors import ConfigError
from shared.kafka import client_logs, client_names
from shared.kafka.client_props import to_aiokafka, to_librdkafka
from shared.kafka.factories import aiokafka_kwargs, confluent_consumer, confluent_producer, librdkafka_config

SCRAM = {
    "bootstrap.servers": "h1:9092,h2:9092",
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2" password="p@ss \\"q\\"";'
    ),
}


def test_librdkafka_gets_credentials_from_the_jaas_line() -> None:
    out = to_librdkafka(SCRAM).settings
    assert out["sasl.username"] == "mm2"
    assert out["sasl.password"] == 'p@ss "q"'
    assert out["security.protocol"] == "SASL_PLAINTEXT"
    assert "sasl.jaas.config" not in out


def test_renamed_and_unit_converted_settings() -> None:
    out = to_librdkafka({"max.request.size": "2097152", "buffer.memory": "33554432", "linger.ms": "5"}).settings
    assert out == {"message.max.bytes": "2097152", "queue.buffering.max.kbytes": "32768", "linger.ms": "5"}


def test_javas_minus_one_socket_buffer_the_os_default_is_librdkafkas_zero_and_a_client_accepts_it() -> None:
    """MM2 users set receive.buffer.bytes=-1 for a distant source (the OS sizes the socket); librdkafka refuses
    -1 and spells the same thing 0."""
    props = {"bootstrap.servers": "127.0.0.1:1", "receive.buffer.bytes": "-1", "send.buffer.bytes": "131072"}
    out = to_librdkafka(props).settings
    assert out["socket.receive.buffer.bytes"] == "0"
    assert out["socket.send.buffer.bytes"] == "131072"
    confluent_consumer(props, **{"group.id": "g"}).close()


def test_settings_without_an_equivalent_are_reported_not_dropped_silently() -> None:
    translated = to_librdkafka({"bootstrap.servers": "h:1", "interceptor.classes": "com.x.Y", "key.serializer": "x"})
    assert translated.ignored == ("interceptor.classes",)


def test_an_unreadable_truststore_is_refused_with_the_key_named() -> None:
    with pytest.raises(ConfigError, match=r"^ssl.truststore.location=/x.jks: cannot read it"):
        to_librdkafka({"security.protocol": "SSL", "ssl.truststore.location": "/x.jks"})


def test_pem_truststore_becomes_ca_location() -> None:
    props = {"security.protocol": "SSL", "ssl.truststore.location": "/ca.pem", "ssl.truststore.type": "PEM"}
    assert to_librdkafka(props).settings["ssl.ca.location"] == "/ca.pem"


def test_jaas_without_password_names_the_key_but_not_the_value() -> None:
    with pytest.raises(ConfigError) as info:
        to_librdkafka({"sasl.jaas.config": 'x required username="u" secretish="hunter2";'})
    assert "sasl.jaas.config" in str(info.value)
    assert "hunter2" not in str(info.value)


def test_aiokafka_kwargs_are_typed() -> None:
    out = to_aiokafka({**SCRAM, "linger.ms": "7", "enable.idempotence": "true", "acks": "-1", "batch.size": "1000"})
    assert out.settings["sasl_plain_username"] == "mm2"
    assert out.settings["linger_ms"] == 7
    assert out.settings["enable_idempotence"] is True
    assert out.settings["acks"] == "all"
    assert out.settings["max_batch_size"] == 1000
    assert out.settings["bootstrap_servers"] == "h1:9092,h2:9092"


@pytest.mark.parametrize(
    ("jaas", "password"),
    [
        ('x required username="u" password="back\\\\slash";', "back\\slash"),
        ('x required username="u" password="tab\\there\\101";', "tab\there" + "A"),
        ("x required username=u password=bare-word;", "bare-word"),
        ('x required username="u" password="semi;colon = \\"quoted\\"";', 'semi;colon = "quoted"'),
    ],
)
def test_jaas_values_are_read_as_the_jvm_reads_them(jaas: str, password: str) -> None:
    # Kafka parses JAAS lines with Java's StreamTokenizer: quoted values take backslash escapes.
    assert to_librdkafka({"sasl.jaas.config": jaas}).settings["sasl.password"] == password


def test_compression_none_means_no_compression_for_aiokafka() -> None:
    assert to_aiokafka({"compression.type": "none"}).settings["compression_type"] is None
    assert to_aiokafka({"compression.type": "LZ4"}).settings["compression_type"] == "lz4"


def test_java_fetch_max_wait_reaches_librdkafka_under_its_own_name() -> None:
    settings = librdkafka_config({"bootstrap.servers": "127.0.0.1:1", "fetch.max.wait.ms": "100"}, "consumer")
    assert settings["fetch.wait.max.ms"] == "100"
    consumer = confluent_consumer({"bootstrap.servers": "127.0.0.1:1", "fetch.max.wait.ms": "100"}, **{"group.id": "g"})
    consumer.close()  # librdkafka refused the Java name outright ("No such configuration property")


def test_a_client_gets_only_the_settings_of_its_kind_so_librdkafka_warns_about_none() -> None:
    flow_wide = {"bootstrap.servers": "127.0.0.1:1", "isolation.level": "read_committed", "enable.auto.commit": "false"}
    flow_wide |= {"acks": "all", "linger.ms": "5"}
    producer_settings = librdkafka_config(flow_wide, "producer")
    assert ("isolation.level" in producer_settings, "enable.auto.commit" in producer_settings) == (False, False)
    assert producer_settings["acks"] == "all"
    consumer_settings = librdkafka_config(flow_wide, "consumer")
    assert consumer_settings["isolation.level"] == "read_committed"
    assert "acks" not in consumer_settings
    warnings: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            warnings.append(record.getMessage())

    logger = logging.getLogger("test-librdkafka-confwarn")
    logger.addHandler(Collect())
    logger.propagate = False
    producer = confluent_producer(flow_wide, logger=logger)
    producer.poll(0.2)
    assert [w for w in warnings if "CONFWARN" in w] == []


def test_aiokafka_consumers_honour_enable_auto_commit_instead_of_warning_about_it() -> None:
    translated = to_aiokafka({"bootstrap.servers": "h:1", "enable.auto.commit": "false"})
    assert translated.ignored == ()
    assert aiokafka_kwargs({"enable.auto.commit": "false"}, "consumer")["enable_auto_commit"] is False
    assert "enable_auto_commit" not in aiokafka_kwargs({"enable.auto.commit": "false"}, "producer")


def test_every_client_is_named_after_the_process_and_its_role_unless_the_user_named_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_names, "_process", "strait-checkpoint")
    plain = {"bootstrap.servers": "127.0.0.1:1"}
    assert librdkafka_config(plain, "consumer")["client.id"] == "strait-checkpoint|consumer"
    assert aiokafka_kwargs(plain, "admin")["client_id"] == "strait-checkpoint|admin"
    purpose = client_names.client_id("producer", "A->B|task-3")
    assert purpose == "strait-checkpoint|A->B|task-3|producer"
    assert librdkafka_config(plain, "producer", **{"client.id": purpose})["client.id"] == purpose
    assert aiokafka_kwargs(plain, "consumer", client_id=None)["client_id"] == "strait-checkpoint|consumer"
    users = {**plain, "client.id": "team-quota"}  # the user's id wins: client quotas are set by it
    assert librdkafka_config(users, "producer", **{"client.id": purpose})["client.id"] == "team-quota"
    assert aiokafka_kwargs(users, "consumer", client_id="lease-1")["client_id"] == "team-quota"


def test_a_console_process_builds_clients_that_write_no_librdkafka_info_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo and the `strait` command: a destroyed client's "Purging 1 unserved events from background queue"
    (info, syslog level 6) reached the demo's console every minute or so; notices and worse still show."""
    props = {"bootstrap.servers": "127.0.0.1:1"}
    monkeypatch.setattr(client_logs, "_log_level", None)  # (undone after the test: the process's setting)
    assert "log_level" not in librdkafka_config(props, "admin"), "a service keeps librdkafka's own default (info)"
    client_logs.quiet_client_info()
    assert librdkafka_config(props, "admin")["log_level"] == 5
