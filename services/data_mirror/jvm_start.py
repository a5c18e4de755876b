"""How the Spark driver's JVM starts fast: a class-data archive of Spark's classes, and no optimising compiler.

Measured on 2 cores (PySpark 4.3, Java 17): the driver's session took 4.5-4.9 s to start; with an archive of the
classes a Spark start loads (Java's application class-data sharing, built once per install) 2.4-2.6 s, and with
the C1 compiler alone 1.7 s. The driver JVM schedules a few long-lived tasks and never touches a record, so C2's
peak speed buys nothing there while its compilations cost CPU at start-up. The archive is made at install time
(`python -m services.data_mirror.class_archive`, which `scripts/bootstrap` and the image build run); a JVM that
cannot use it (another Java build, another classpath) runs without it, silently.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

ARCHIVE_ENV = "STRAIT_SPARK_CLASS_ARCHIVE"  # where the archive is (or is made); empty: none
C1_ONLY = "-XX:TieredStopAtLevel=1"
QUIET_SHARING = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # an unusable archive is skipped without warnings


def archive_path() -> Path | None:
    """The archive's path: $STRAIT_SPARK_CLASS_ARCHIVE, else one per PySpark version and Java installation in
    this environment (a JVM ignores an archive another Java build made: a new Java gets a new one)."""
    configured = os.environ.get(ARCHIVE_ENV)
    if configured is not None:
        return Path(configured) if configured.strip() else None
    from pyspark.version import __version__

    return Path(sys.prefix) / "share" / "strait" / f"spark-{__version__}-{_installation()}.jsa"


def _installation() -> str:
    """A short digest of what the archive depends on: the java binary Spark runs (JAVA_HOME's, else the one on
    PATH) and Spark's jars directory (a reinstall changes its time), each by path, size and time."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    import pyspark

    parts = [Path(found).resolve() if found else None, Path(pyspark.__file__).parent / "jars"]
    marks = []
    for part in parts:
        if part is None or not part.exists():
            marks.append("none")
            continue
        stat = part.stat()
        marks.append(f"{part}:{stat.st_size}:{int(stat.st_mtime)}")
    return hashlib.sha256("|".join(marks).encode()).hexdigest()[:12]


def driver_start_options() -> str:
    """JVM options for the driver: C1 only, and the class-data archive when it exists."""
    path = archive_path()
    if path is None or not path.is_file() or any(ch.isspace() for ch in str(path)):
        return C1_ONLY  # (Spark splits these options at white space: a path with a space would break the JVM's start)
    return f"{C1_ONLY} -XX:SharedArchiveFile={path} {QUIET_SHARING}"
