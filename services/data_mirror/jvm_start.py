"""How the Spark driver's JVM starts fast and stays small: a class-data archive, no optimising compiler, a compact heap.

Measured on 2 cores (PySpark 4.3, Java 17): the driver's session took 4.5-4.9 s to start; with an archive of the
classes a Spark start loads (Java's application class-data sharing, built once per install) 2.4-2.6 s, and with
the C1 compiler alone 1.7 s. The driver JVM schedules a few long-lived tasks and never touches a record, so C2's
peak speed buys nothing there while its compilations cost CPU at start-up. The archive is made at install time
(`python -m services.data_mirror.class_archive`, which `scripts/bootstrap` and the image build run); a JVM that
cannot use it (another Java build, another classpath) runs without it, silently.

For the same reason its heap starts small and is collected by the serial collector: G1's default start (1/64 of the
machine's memory, 384 MiB on 24 GiB) and its remembered sets made the JVM's resident memory 290 MiB during a copy,
the serial collector on a heap that starts at 32 MiB 250 MiB (the rest is Spark's classes and threads).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from shared.class_sharing import archive_options, installation_digest, java_launcher

ARCHIVE_ENV = "STRAIT_SPARK_CLASS_ARCHIVE"  # where the archive is (or is made); empty: none
C1_ONLY = "-XX:TieredStopAtLevel=1"
COMPACT_HEAP = "-Xms32m"
SERIAL_GC = "-XX:+UseSerialGC"
_CHOOSES_GC = re.compile(r"-XX:\+Use\w*GC\b")  # a second collector would stop the JVM from starting


def archive_path() -> Path | None:
    """The archive's path: $STRAIT_SPARK_CLASS_ARCHIVE, else one per PySpark version and Java installation in
    this environment (a JVM ignores an archive another Java build made: a new Java gets a new one)."""
    configured = os.environ.get(ARCHIVE_ENV)
    if configured is not None:
        return Path(configured) if configured.strip() else None
    from pyspark.version import __version__

    return Path(sys.prefix) / "share" / "strait" / f"spark-{__version__}-{_installation()}.jsa"


def _installation() -> str:
    """A short digest of what the archive depends on: the java binary Spark runs and Spark's jars directory."""
    import pyspark

    return installation_digest(java_launcher(), Path(pyspark.__file__).parent / "jars")[:12]


def driver_start_options(user_options: str = "") -> str:
    """JVM options for the driver: C1 only, a compact heap (the serial collector unless `user_options`, which
    follow these, choose one), and the class-data archive when it exists."""
    options = [C1_ONLY, COMPACT_HEAP]
    if not _CHOOSES_GC.search(user_options):
        options.append(SERIAL_GC)
    path = archive_path()
    if path is not None and path.is_file() and not any(ch.isspace() for ch in str(path)):
        # (Spark splits these options at white space: a path with a space would break the JVM's start)
        options += archive_options(path)
    return " ".join(options)
