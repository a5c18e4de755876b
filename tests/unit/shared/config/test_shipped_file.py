"""The sample config/connect-mirror-maker.properties that Kafka ships loads unchanged."""

from __future__ import annotations

from pathlib import Path

from shared.config import FlowSettings, load_mm2_config

# Re-typed from Apache Kafka's config/connect-mirror-maker.properties (Apache License 2.0).
SHIPPED = """\
# Licensed to the Apache Software Foundation (ASF) under A or more
# contributor license agreements.  See the NOTICE file distributed with
# this work for additional information regarding copyright ownership.
# see org.apache.kafka.clients.consumer.ConsumerConfig for more details

# Sample MirrorMaker 2.0 top-level configuration file
# Run with ./bin/connect-mirror-maker.sh connect-mirror-maker.properties

# specify any number of cluster aliases
clusters = A, B

# connection information for each cluster
# This is a comma separated host:port pairs for each cluster
# for e.g. "A_host1:9092, A_host2:9092, A_host3:9092"
A.bootstrap.servers = A_host1:9092, A_host2:9092, A_host3:9092
B.bootstrap.servers = B_host1:9092, B_host2:9092, B_host3:9092

# enable and configure individual replication flows
A->B.enabled = true

# regex which defines which topics gets replicated. For eg "foo-.*"
A->B.topics = .*

B->A.enabled = true
B->A.topics = .*

# Setting replication factor of newly created remote topics
replication.factor=1

############################# Internal Topic Settings  #############################
# The replication factor for mm2 internal topics "heartbeats", "B.checkpoints.internal" and
# "mm2-offset-syncs.B.internal"
# For anything other than development testing, a value greater than 1 is recommended to ensure availability such as 3.
checkpoints.topic.replication.factor=1
heartbeats.topic.replication.factor=1
offset-syncs.topic.replication.factor=1

# The replication factor for connect internal topics "mm2-configs.B.internal", "mm2-offsets.B.internal" and
# "mm2-status.B.internal"
# For anything other than development testing, a value greater than 1 is recommended to ensure availability such as 3.
offset.storage.replication.factor=1
status.storage.replication.factor=1
config.storage.replication.factor=1

# customize as needed
# replication.policy.separator = _
# sync.topic.acls.enabled = false
# emit.heartbeats.interval.seconds = 5
"""


def test_shipped_sample_loads(tmp_path: Path) -> None:
    path = tmp_path / "connect-mirror-maker.properties"
    path.write_text(SHIPPED, encoding="utf-8")
    config = load_mm2_config(path, env={})

    assert list(config.clusters) == ["A", "B"]
    assert config.clusters["A"].bootstrap_servers == "A_host1:9092,A_host2:9092,A_host3:9092"
    assert config.clusters["B"].bootstrap_servers == "B_host1:9092,B_host2:9092,B_host3:9092"
    assert [flow.name for flow in config.flows] == ["A->B", "B->A"]
    assert [flow.name for flow in config.enabled_flows] == ["A->B", "B->A"]
    expected = FlowSettings(
        replication_factor=1,
        checkpoints_topic_replication_factor=1,
        heartbeats_topic_replication_factor=1,
        offset_syncs_topic_replication_factor=1,
    )
    assert all(flow.settings == expected for flow in config.flows)
    assert config.ignored_keys == (
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "config.storage.replication.factor",
    )
    assert config.top_level["replication.factor"] == "1"
