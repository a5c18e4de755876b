"""Real Kafka clusters for the integration suite, shared per test session, stopped even on failure."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from shared.localkafka import KafkaCluster, SaslUser, kafka_classpath
from shared.localkafka.cluster import running
from shared.localspark import SparkStandaloneCluster

MIRROR_USER = SaslUser("mirror", "mirror-secret-pw")

# Every JVM the tests start (brokers, Spark's driver and workers, MM2) lives for seconds to minutes, too short for
# C2's compiler threads to earn back their CPU on two cores: with C1 alone the two heaviest data-mirror tests took
# 40 s of CPU instead of 54 s. Benchmarks and the demo keep the JVM's default. A value set by the user wins.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")


# The longest files first (estimated from a clean-clone run's slowest tests), then the other integration files,
# then the unit tests: with files spread over xdist workers (scripts/test runs `-n 2 --dist loadfile
# --no-loadscope-reorder`, which keeps this order), the long ones never start last and leave one worker alone.
LONGEST_FIRST = (
    "test_faults_network_outage.py",
    "test_faults_network.py",
    "test_faults_network_bandwidth.py",
    "test_broker_defaults.py",
    "test_faults_brokers.py",
    "test_data_mirror_crash.py",
    "test_faults_topics.py",
    "test_data_mirror.py",
    "test_migrate_mm2.py",
    "test_fault_source_outage.py",
    "test_offset_translator.py",
    "test_security.py",
    "test_checkpoint.py",
    "test_demo.py",
    "test_faults_services.py",
    "test_bad_configs.py",
    "test_end_to_end_failover.py",
    "test_spark_standalone.py",
    "test_heartbeat_with_mirror.py",
    "test_stop_with_brokers_gone.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration needs brokers; the longest files run first."""

    def rank(item: pytest.Item) -> tuple[int, int]:
        if "tests/integration" not in str(item.path):
            return (2, 0)
        name = item.path.name
        return (0, LONGEST_FIRST.index(name)) if name in LONGEST_FIRST else (1, 0)

    for item in items:
        if "tests/integration" in str(item.path):
            item.add_marker(pytest.mark.integration)
    items.sort(key=rank)


@pytest.fixture(scope="session")
def kafka_runtime() -> str:
    """Resolve the Kafka jars once (Maven); fails with what to install if Java or Maven is missing."""
    return kafka_classpath()


@pytest.fixture(scope="session")
def two_clusters(kafka_runtime: str) -> Iterator[tuple[KafkaCluster, KafkaCluster]]:
    """Source A and target B, one broker each, started side by side."""
    with running(KafkaCluster("A"), KafkaCluster("B")) as (source, target):
        yield source, target


@pytest.fixture(scope="session")
def cluster_a(two_clusters: tuple[KafkaCluster, KafkaCluster]) -> KafkaCluster:
    """The source cluster of the shared pair."""
    return two_clusters[0]


@pytest.fixture(scope="session")
def cluster_b(two_clusters: tuple[KafkaCluster, KafkaCluster]) -> KafkaCluster:
    """The target cluster of the shared pair."""
    return two_clusters[1]


@pytest.fixture(scope="session")
def three_broker_cluster(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A three-broker cluster for fault tests, started the first time a test asks for it."""
    cluster = KafkaCluster("C3", brokers=3)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def three_broker_target(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A second three-broker cluster, the target of broker-fault tests (so every internal topic has RF 3)."""
    cluster = KafkaCluster("T3", brokers=3)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def secure_cluster(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """SASL_PLAINTEXT/SCRAM with StandardAuthorizer; `admin` is a super user, `mirror` has no ACLs yet."""
    cluster = KafkaCluster("SEC", sasl=True, users=(MIRROR_USER,))
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkStandaloneCluster]:
    """A Spark standalone master with two 2-core workers, started the first time a test asks for it."""
    cluster = SparkStandaloneCluster(tmp_path_factory.mktemp("spark"), workers=2, cores_per_worker=2)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def unique() -> str:
    """A short suffix so every test makes its own topics and groups."""
    return uuid.uuid4().hex[:8]
