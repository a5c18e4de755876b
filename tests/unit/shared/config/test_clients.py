"""Client settings: cluster keys, MM2's top-level defaults, and flow-level overrides per side and role."""

from __future__ import annotations

from shared.config import parse_mm2_config

BASE = {"clusters": "A,B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092"}


def test_cluster_keys_split_into_client_roles_and_worker() -> None:
    config = parse_mm2_config(
        {
            **BASE,
            "A.security.protocol": "SSL",
            "A.client.id": "mirror",
            "A.consumer.fetch.max.bytes": "1000",
            "A.producer.linger.ms": "5",
            "A.admin.request.timeout.ms": "9000",
            "A.offset.storage.replication.factor": "3",
            "A.group.id": "mm2-workers",
            "A.plugin.discovery": "service_load",
        },
        env={},
    )
    cluster = config.clusters["A"]
    assert cluster.client == {"security.protocol": "SSL", "client.id": "mirror"}
    assert cluster.consumer == {"fetch.max.bytes": "1000"}
    assert cluster.producer == {"linger.ms": "5"}
    assert cluster.admin == {"request.timeout.ms": "9000"}
    assert cluster.worker == {
        "offset.storage.replication.factor": "3",
        "group.id": "mm2-workers",
        "plugin.discovery": "service_load",  # MM2's herder for the cluster reads it; no client's setting
    }
    assert cluster.consumer_props() == {
        "bootstrap.servers": "a:9092",
        "security.protocol": "SSL",
        "client.id": "mirror",
        "fetch.max.bytes": "1000",
    }
    assert cluster.producer_props()["linger.ms"] == "5"
    assert "fetch.max.bytes" not in cluster.producer_props()
    assert cluster.admin_props()["request.timeout.ms"] == "9000"


def test_specific_role_key_wins_over_cluster_key() -> None:
    config = parse_mm2_config({**BASE, "A.client.id": "all", "A.consumer.client.id": "reader"}, env={})
    assert config.clusters["A"].consumer_props()["client.id"] == "reader"
    assert config.clusters["A"].producer_props()["client.id"] == "all"


def test_top_level_security_keys_apply_to_every_cluster_under_its_own() -> None:
    config = parse_mm2_config(
        {
            **BASE,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "ssl.truststore.location": "/etc/ts.jks",
            "B.security.protocol": "PLAINTEXT",
        },
        env={},
    )
    assert config.clusters["A"].admin_props()["security.protocol"] == "SASL_SSL"
    assert config.clusters["B"].admin_props()["security.protocol"] == "PLAINTEXT"
    assert config.clusters["B"].consumer_props()["sasl.mechanism"] == "PLAIN"
    assert config.clusters["A"].producer_props()["ssl.truststore.location"] == "/etc/ts.jks"
    assert config.ignored_keys == ()


def test_top_level_consumer_keys_are_ignored_as_in_mm2() -> None:
    config = parse_mm2_config({**BASE, "consumer.auto.offset.reset": "latest"}, env={})
    assert "auto.offset.reset" not in config.clusters["A"].consumer_props()
    assert config.flow("A", "B").source_consumer_props()["auto.offset.reset"] == "earliest"
    assert config.ignored_keys == ("consumer.auto.offset.reset",)


def test_flow_consumer_override_reaches_the_source_consumer() -> None:
    config = parse_mm2_config({**BASE, "A->B.consumer.auto.offset.reset": "latest"}, env={})
    flow = config.flow("A", "B")
    assert flow.consumer_overrides == {"auto.offset.reset": "latest"}
    assert flow.source_consumer_props()["auto.offset.reset"] == "latest"
    assert config.flow("B", "A").source_consumer_props()["auto.offset.reset"] == "earliest"


def test_flow_override_beats_the_clusters_own_role_key() -> None:
    config = parse_mm2_config({**BASE, "A.consumer.fetch.max.bytes": "1", "A->B.consumer.fetch.max.bytes": "2"}, env={})
    assert config.flow("A", "B").source_consumer_props()["fetch.max.bytes"] == "2"
    assert config.flow("B", "A").target_consumer_props()["fetch.max.bytes"] == "1"


def test_mm2_consumer_defaults() -> None:
    props = parse_mm2_config({**BASE, "A.consumer.enable.auto.commit": "true"}, env={}).flow("A", "B")
    assert props.source_consumer_props()["enable.auto.commit"] == "false"
    assert props.target_consumer_props()["auto.offset.reset"] == "earliest"


def test_flow_precedence_over_cluster_and_side_over_flow() -> None:
    config = parse_mm2_config(
        {
            **BASE,
            "A.consumer.max.poll.records": "1",
            "A->B.consumer.max.poll.records": "2",
            "A->B.consumer.fetch.min.bytes": "10",
            "A->B.consumer.override.fetch.min.bytes": "20",
            "A->B.source.consumer.max.poll.records": "3",
            "A->B.producer.compression.type": "zstd",
            "A->B.target.producer.acks": "all",
            "A->B.admin.request.timeout.ms": "7",
            "A->B.source.admin.request.timeout.ms": "8",
        },
        env={},
    )
    flow = config.flow("A", "B")
    source_consumer = flow.source_consumer_props()
    assert (source_consumer["max.poll.records"], source_consumer["fetch.min.bytes"]) == ("3", "20")
    assert flow.target_consumer_props()["max.poll.records"] == "2"
    assert flow.target_producer_props()["compression.type"] == "zstd"
    assert flow.target_producer_props()["acks"] == "all"
    assert "acks" not in flow.source_producer_props()
    assert flow.source_producer_props()["bootstrap.servers"] == "a:9092"
    assert flow.target_producer_props()["bootstrap.servers"] == "b:9092"
    assert flow.source_admin_props()["request.timeout.ms"] == "8"
    assert flow.target_admin_props()["request.timeout.ms"] == "7"
    assert flow.source_overrides.consumer == {"max.poll.records": "3"}
    assert flow.target_overrides.producer == {"acks": "all"}


def test_connector_settings_with_client_prefixes_stay_settings() -> None:
    flow = parse_mm2_config(
        {**BASE, "A->B.consumer.poll.timeout.ms": "250", "A->B.admin.timeout.ms": "1234"}, env={}
    ).flow("A", "B")
    assert (flow.settings.consumer_poll_timeout_ms, flow.settings.admin_timeout_ms) == (250, 1234)
    assert flow.consumer_overrides == {}
    assert flow.admin_overrides == {}


def test_side_cluster_keys_replace_cluster_keys_for_that_flow() -> None:
    config = parse_mm2_config(
        {
            **BASE,
            "A.security.protocol": "SSL",
            "A->B.source.cluster.security.protocol": "SASL_SSL",
            "A->B.target.cluster.bootstrap.servers": "b-internal:9093",
        },
        env={},
    )
    flow = config.flow("A", "B")
    assert flow.source_consumer_props()["security.protocol"] == "SASL_SSL"
    assert flow.target_producer_props()["bootstrap.servers"] == "b-internal:9093"
    assert config.clusters["A"].client["security.protocol"] == "SSL"
    assert config.flow("B", "A").target_cluster.client["security.protocol"] == "SSL"
