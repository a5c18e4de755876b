"""Java-style client settings from an MM2 file reach librdkafka and aiokafka with their meaning intact."""

from __future__ import annotations

import pytest

from shared.errors import ConfigError
from shared.kafka.client_props import to_aiokafka, to_librdkafka

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
