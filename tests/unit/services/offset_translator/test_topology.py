"""MirrorClient's answers from topic names, with the cases of MM2's own MirrorClientTest."""

from __future__ import annotations

import httpx

from services.offset_translator import topology
from services.offset_translator.index import TranslatorIndex
from shared.replication_policy import DefaultReplicationPolicy, IdentityReplicationPolicy
from tests.unit.services.offset_translator.conftest import NOW_MS

POLICY = DefaultReplicationPolicy()


def test_heartbeat_and_checkpoint_topics() -> None:
    names = ["heartbeats", "source1.heartbeats", "source2.source1.heartbeats", "heartbeats!", "!heartbeats",
             "source1heartbeats", "source1-heartbeats", "source1.checkpoints.internal", "checkpoints.internal",
             "topic1"]  # fmt: skip
    assert topology.heartbeat_topics(POLICY, names) == [
        "heartbeats",
        "source1.heartbeats",
        "source2.source1.heartbeats",
    ]
    assert topology.checkpoint_topics(POLICY, names) == ["source1.checkpoints.internal"]


def test_hops_for_topic() -> None:
    assert topology.hops_for_topic(POLICY, "source1.topic1", "source1") == 1
    assert topology.hops_for_topic(POLICY, "source2.source1.topic1", "source2") == 1
    assert topology.hops_for_topic(POLICY, "source2.source1.topic1", "source1") == 2
    assert topology.hops_for_topic(POLICY, "source2.source1.topic1", "source3") == -1
    assert topology.hops_for_topic(POLICY, "topic1", "source1") == -1


def test_upstream_clusters_and_replication_hops() -> None:
    names = ["topic1", "topic2", "heartbeats", "source1.heartbeats", "source1.source2.heartbeats", "source3.heartbeats",
             "source4.topic9"]  # fmt: skip
    assert topology.upstream_clusters(POLICY, names) == ["source1", "source2", "source3"]
    assert topology.replication_hops(POLICY, names, "source1") == 1
    assert topology.replication_hops(POLICY, names, "source2") == 2
    assert topology.replication_hops(POLICY, names, "source3") == 1
    # A remote topic without heartbeats does not make its source reachable.
    assert topology.replication_hops(POLICY, names, "source4") == -1


def test_remote_topics_with_a_custom_separator() -> None:
    policy = DefaultReplicationPolicy("__")
    names = ["topic1", "source1__topic4", "source1__source2__topic5", "source3__source4__source5__topic6",
             "source1__checkpoints__internal", "__consumer_offsets"]  # fmt: skip
    assert topology.remote_topics(policy, names) == [
        "source1__source2__topic5",
        "source1__topic4",
        "source3__source4__source5__topic6",
    ]
    assert topology.remote_topics(policy, names, "source1") == ["source1__source2__topic5", "source1__topic4"]


def test_identity_policy_without_alias_sees_only_heartbeat_sources() -> None:
    policy = IdentityReplicationPolicy()
    names = ["topic1", "source1.heartbeats", "source2.source1.heartbeats"]
    assert topology.upstream_clusters(policy, names) == ["source1", "source2"]
    # As in MirrorClient: heartbeat replicas are remote topics (not internal, with a source); topic1 is not.
    assert topology.remote_topics(policy, names) == ["source1.heartbeats", "source2.source1.heartbeats"]


async def test_topology_endpoint(client: httpx.AsyncClient, app: object) -> None:
    index: TranslatorIndex = app.state.index  # type: ignore[attr-defined]
    response = await client.get("/v1/clusters/B/topology")
    assert response.status_code == 503
    assert "not listed yet" in response.json()["detail"]

    names = ["heartbeats", "A.heartbeats", "C.A.heartbeats", "A.orders", "A.checkpoints.internal", "local",
             "__consumer_offsets", "D.E.heartbeats"]  # fmt: skip
    index.set_topics("B", names, NOW_MS - 1500)
    response = await client.get("/v1/clusters/B/topology")
    assert response.status_code == 200
    assert response.json() == {
        "cluster": "B",
        "upstream_clusters": ["A", "C", "D", "E"],
        "replication_hops": {"A": 1, "C": 1, "D": 1, "E": 2},
        "heartbeat_topics": ["A.heartbeats", "C.A.heartbeats", "D.E.heartbeats", "heartbeats"],
        "checkpoint_topics": ["A.checkpoints.internal"],
        "remote_topics": ["A.heartbeats", "A.orders", "C.A.heartbeats", "D.E.heartbeats"],
        "remote_topics_by_source": {
            "A": ["A.heartbeats", "A.orders"],
            "C": ["C.A.heartbeats"],
            "D": ["D.E.heartbeats"],
        },
        "listed_age_ms": 1500,
    }
    assert (await client.get("/v1/clusters/Z/topology")).status_code == 404
    assert (await client.get("/v1/clusters")).json() == {"clusters": ["A", "B", "C"]}
