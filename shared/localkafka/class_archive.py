"""The harness brokers' class-data archive: Java's application class-data sharing for the Kafka classpath.

Classes read from an archive made once per install cost less to load than classes read from the jars. Measured on
2 cores (Java 17, C1 only): a one-node cluster's broker took 2.4-2.6 s of CPU to come up without the archive,
1.4-1.6 s with it, and was ready 1 s sooner. The test suite starts brokers many times (clusters, restarts in fault
tests, and the storage tool that formats each node is a JVM of its own); the demo starts two.

Made at install time (`python -m shared.localkafka`, which `scripts/bootstrap` runs; `archive_builder.py`) by one
broker that starts, serves a topic's writes and reads, and stops; a JVM that cannot use it (another Java build,
another classpath) runs without it, silently. MirrorMaker 2 is started without it: the benchmarks time MM2's start
as MM2 ships.
"""

from __future__ import annotations

from pathlib import Path

from shared.class_sharing import archive_options, installation_digest
from shared.localkafka.jars import CACHE_DIR, java_binary

ARCHIVED_MAINS = frozenset({"kafka.Kafka", "kafka.tools.StorageTool"})


def archive_path(classpath: str) -> Path:
    """Where the archive for `classpath` under this Java installation lives (a new Java or new jars: a new one)."""
    digest = installation_digest(Path(java_binary()).resolve(), extra=classpath)
    return CACHE_DIR / f"kafka-broker-{digest[:16]}.jsa"


def sharing_options(main_class: str, classpath: str) -> list[str]:
    """The JVM options that start `main_class` from the archive, when it is a broker's and the archive exists."""
    if main_class not in ARCHIVED_MAINS:
        return []
    path = archive_path(classpath)
    if not path.is_file():
        return []
    return archive_options(path)
