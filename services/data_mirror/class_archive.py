"""Install step: build the Spark driver's class-data archive where `jvm_start` looks for it.

Run by `scripts/bootstrap` and the data-mirror image build: `python -m services.data_mirror.class_archive`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pyspark import SparkContext

from services.data_mirror.jvm_start import ARCHIVE_ENV, archive_path
from services.data_mirror.spark_session import spark_conf, start_spark

EXIT_WAIT_S = 120  # the JVM writes the archive as it exits


def build_archive(path: Path) -> int:
    """Start a local Spark session, run one job, stop, and let the JVM write the classes it loaded to `path`.

    Returns the archive's size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    conf = spark_conf({}, "local[1]")
    options = [o for o in conf["spark.driver.extraJavaOptions"].split() if not o.startswith("-XX:SharedArchiveFile")]
    conf["spark.driver.extraJavaOptions"] = " ".join([*options, f"-XX:ArchiveClassesAtExit={partial}"])
    session = start_spark(conf)
    session.sparkContext.parallelize([1], 1).map(lambda value: value + 1).collect()
    session.stop()
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if gateway is not None:
        gateway.shutdown()
    if process is not None:
        process.stdin.close()  # the gateway JVM exits once its parent's pipe closes
        process.wait(EXIT_WAIT_S)
    deadline = time.monotonic() + EXIT_WAIT_S
    while not partial.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not partial.is_file():
        raise RuntimeError(f"the Spark driver JVM wrote no class-data archive to {partial}")
    partial.replace(path)
    return path.stat().st_size


def main() -> None:
    """Build the archive where the driver looks for it (install step). A failure only costs start-up speed: it is
    reported, and the install goes on."""
    path = archive_path()
    if path is None:
        print(f"class_archive: {ARCHIVE_ENV} is empty: no class-data archive", file=sys.stderr)
        return
    if any(ch.isspace() for ch in str(path)):
        print(f"class_archive: {path} has white space, which Spark's options cannot carry: no archive", file=sys.stderr)
        return
    try:
        size = build_archive(path)
    except Exception as exc:
        print(f"class_archive: no class-data archive (the driver starts without it, slower): {exc}", file=sys.stderr)
        return
    print(f"class_archive: Spark class-data archive {path} ({size / 2**20:.0f} MiB)", file=sys.stderr)


if __name__ == "__main__":
    main()
