"""Kafka's own producer performance tool (kafka-producer-perf-test) from the harness classpath.

It fills the source topics, measures the target brokers' raw produce rate (the ceiling a replicator
cannot beat on the same brokers) and drives the steady 10k records/s of the latency test. Its records
carry no explicit timestamp, so the producer stamps each with the wall clock at send time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.localkafka.processes import JvmProcess

PERF_MAIN = "org.apache.kafka.tools.ProducerPerformance"
PERF_HEAP_MB = 512
_SUMMARY = re.compile(
    r"^(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mib>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency",
    re.MULTILINE,
)


@dataclass(frozen=True)
class PerfResult:
    """The tool's closing summary line (its "MB" is 2^20 bytes of record values)."""

    records: int
    records_per_s: float
    mib_per_s: float
    avg_latency_ms: float
    max_latency_ms: float


def perf_command(
    bootstrap: str, topic: str, records: int, record_size: int, *, throughput: int, producer: Mapping[str, str]
) -> list[str]:
    """Arguments of one ProducerPerformance run."""
    props = [f"{key}={value}" for key, value in producer.items()]
    return [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--record-size",
        str(record_size),
        "--throughput",
        str(throughput),
        "--command-property",
        *props,
    ]


def perf_process(
    bootstrap: str,
    topic: str,
    records: int,
    record_size: int,
    *,
    log_path: Path,
    throughput: int = -1,
    producer: Mapping[str, str],
) -> JvmProcess:
    """A ProducerPerformance JVM, not started."""
    args = perf_command(bootstrap, topic, records, record_size, throughput=throughput, producer=producer)
    return JvmProcess(PERF_MAIN, args, log_path=log_path, heap_mb=PERF_HEAP_MB)


def run_perf(
    bootstrap: str,
    topic: str,
    records: int,
    record_size: int,
    *,
    log_path: Path,
    producer: Mapping[str, str],
    timeout_s: float = 600,
) -> PerfResult:
    """Produce `records` records of `record_size` bytes as fast as the brokers take them; the summary."""
    log_path.unlink(missing_ok=True)
    process = perf_process(bootstrap, topic, records, record_size, log_path=log_path, producer=producer)
    code = process.run_to_completion(timeout_s=timeout_s)
    result = parse_summary(process.log_tail(20_000))
    if code != 0 or result is None:
        raise RuntimeError(f"producer performance tool failed (exit {code}): {process.log_tail(2000)}")
    return result


def parse_summary(output: str) -> PerfResult | None:
    """The last summary line of the tool's output, if any."""
    matches = list(_SUMMARY.finditer(output))
    if not matches:
        return None
    last = matches[-1]
    return PerfResult(
        int(last["records"]), float(last["rate"]), float(last["mib"]), float(last["avg"]), float(last["max"])
    )
