"""Real Kafka clusters for the integration suite, shared per test session, stopped even on failure."""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.localkafka import KafkaCluster, SaslUser, kafka_classpath
from shared.localkafka.cluster import running
from shared.localspark import SparkStandaloneCluster

MIRROR_USER = SaslUser("mirror", "mirror-secret-pw")

# Every JVM the tests start (brokers, Spark's driver and workers, MM2) lives for seconds to minutes, too short for
# C2's compiler threads to earn back their CPU on two cores: with C1 alone the two heaviest data-mirror tests took
# 40 s of CPU instead of 54 s. Benchmarks and the demo keep the JVM's default. A value set by the user wins.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")


# Files go to xdist workers whole (`--dist loadfile --no-loadscope-reorder` in scripts/test keeps this order), so
# the longest must start first: one started last leaves the other workers idle while it runs. DURATIONS holds each
# integration file's seconds (setup, call and teardown of its tests) from a clean-clone run; a file not in it yet
# goes first, since a long one must not start last. Refresh it with
# `STRAIT_TEST_DURATIONS=tests/integration/durations.json scripts/test` after adding or growing a long test.
DURATIONS = Path(__file__).with_name("durations.json")
DURATIONS_OUT = "STRAIT_TEST_DURATIONS"


def _file_seconds() -> dict[str, float]:
    return {str(name): float(seconds) for name, seconds in json.loads(DURATIONS.read_text()).items()}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything under tests/integration needs brokers; the longest files run first, the unit tests last."""
    seconds = _file_seconds()

    def rank(item: pytest.Item) -> tuple[int, float, str]:
        if "tests/integration" not in str(item.path):
            return (2, 0.0, "")
        name = item.path.name
        return (0, -seconds.get(name, math.inf), name)

    for item in items:
        if "tests/integration" in str(item.path):
            item.add_marker(pytest.mark.integration)
    items.sort(key=rank)


_timed: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each integration file's seconds (on xdist's controller every worker's reports arrive here)."""
    if os.environ.get(DURATIONS_OUT) and "tests/integration/" in report.nodeid:
        name = Path(report.nodeid.split("::")[0]).name
        _timed[name] = _timed.get(name, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With STRAIT_TEST_DURATIONS set, write the files' seconds there, longest first (not on xdist's workers)."""
    out = os.environ.get(DURATIONS_OUT)
    if not out or hasattr(session.config, "workerinput") or not _timed:
        return
    ordered = dict(sorted(((name, round(total, 1)) for name, total in _timed.items()), key=lambda kv: -kv[1]))
    Path(out).write_text(json.dumps(ordered, indent=1) + "\n")


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


@pytest.fixture(scope="module")
def three_broker_cluster(kafka_runtime: str) -> Iterator[KafkaCluster]:
    """A three-broker cluster for fault tests, started the first time a test of a file asks for it and stopped after
    that file: an idle three-node cluster costs the run 0.05 cores for as long as it is up."""
    cluster = KafkaCluster("C3", brokers=3)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
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
