"""The benchmark's pure parts: the perf tool's summary, py-spy stacks, section selection and the report."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from benchmarks.contenders import MM2, STRAIT, MirrorSetup, mirror_properties
from benchmarks.findings import versus
from benchmarks.model import Section
from benchmarks.producer_perf import parse_summary
from benchmarks.profiling import parse_collapsed
from benchmarks.replica_ceiling import ReplicaCopy, parse_answer
from benchmarks.report import Outcome, Report, render
from benchmarks.runner import parse_only
from benchmarks.usage import UsageSampler
from benchmarks.wan import recommended

PERF_OUTPUT = """\
49153 records sent, 9830.6 records/sec (9.60 MB/sec), 152.3 ms avg latency, 611.0 ms max latency.
100000 records sent, 19968.1 records/sec (19.50 MB/sec), 101.21 ms avg latency, 611.00 ms max latency, \
42 ms 50th, 380 ms 95th, 560 ms 99th, 605 ms 99.9th.
"""


def test_the_perf_tools_closing_summary_is_the_result() -> None:
    result = parse_summary(PERF_OUTPUT)
    assert result is not None
    assert (result.records, result.records_per_s, result.mib_per_s) == (100000, 19968.1, 19.5)
    assert parse_summary("Exception in thread main") is None


def test_py_spy_stacks_are_grouped_by_innermost_process_and_shares_are_inclusive() -> None:
    driver = 'process 10:"python strait-data-mirror"'
    worker = f'{driver};process 12:"python -m pyspark.daemon"'
    text = "\n".join(
        [
            f"{worker};main (pyspark/daemon.py:1);run_task (data_mirror/executor.py:60);"
            "_TaskRun._copy_until (data_mirror/executor.py:150) 30",
            f"{worker};main (pyspark/daemon.py:1);run_task (data_mirror/executor.py:60);"
            "_TaskRun._commit (data_mirror/executor.py:250) 10",
            f"{worker};main (pyspark/daemon.py:1);read_int (pyspark/serializers.py:5) 60",
            f"{driver};MirrorDriver.run (data_mirror/driver.py:60) 7",
        ]
    )
    profiles = parse_collapsed(text, lambda process, _frames: "workers" if "pyspark" in process else "driver")
    workers = profiles["workers"]
    assert workers.samples == 100
    assert profiles["driver"].samples == 7
    assert workers.share(r"^run_task \(") == pytest.approx(0.4)
    assert workers.top_self(1) == [("read_int (pyspark/serializers.py)", 0.6)]


def test_only_selects_sections_in_report_order_and_adds_resources_to_measured_runs() -> None:
    assert parse_only("discovery,throughput") == ["throughput", "verify", "discovery", "resources"]
    assert parse_only("latency") == ["latency", "resources"]
    assert parse_only("failover") == ["failover"]
    assert parse_only("verify") == ["verify"]  # on its own it makes the copies it verifies
    assert parse_only("") == [
        "throughput",
        "verify",
        "latency",
        "discovery",
        "failover",
        "translator",
        "checkpoint",
        "checkpoint_scale",
        "resources",
        "scale",
        "cluster",
        "wan",
        "transforms",
        "exactly_once",
    ]
    assert parse_only("scale") == ["scale"]
    assert parse_only("exactly_once") == ["exactly_once"]
    assert parse_only("transforms") == ["transforms"]
    with pytest.raises(ValueError, match="unknown section"):
        parse_only("speed")


def test_versus_says_who_is_behind_and_by_how_much() -> None:
    assert versus(50, 100, higher_is_better=True) == (True, "behind MM2 by 50%")
    assert versus(300, 100, higher_is_better=True) == (False, "ahead of MM2: 3.0x")
    assert versus(120, 100, higher_is_better=False) == (True, "behind MM2 by 20%")
    assert versus(25, 100, higher_is_better=False) == (False, "ahead of MM2: 4.0x shorter")
    assert versus(300, 100, higher_is_better=False) == (True, "behind MM2: 3.0x as long")


def test_report_shows_tables_notes_failures_and_raw_samples() -> None:
    section = Section(
        key="throughput",
        title="1. Throughput",
        method="How it was measured.",
        headers=["tool", "records/s"],
        rows=[["Strait", "1|2"]],
        settings={"config": "```properties\na=b\n```"},
        raw={"runs": [1.5]},
        notes=["Strait is behind MM2 by 10%."],
    )
    report = Report(
        outcomes=[
            Outcome("throughput", "1. Throughput", 61.0, section=section),
            Outcome("failover", "4. Failover precision", 2.0, error="RuntimeError: boom", detail="Traceback ..."),
        ],
        machine={"CPU cores (logical)": "2"},
        versions={"Apache Kafka": "4.3.1"},
        settings={"tasks": "2"},
        command="scripts/bench --quick",
        started="2026-01-01 00:00 UTC",
        total_s=125,
        quick=True,
    )
    text = render(report)
    assert "| Strait | 1\\|2 |" in text
    assert "- Strait is behind MM2 by 10%." in text
    assert "**Not measured:** RuntimeError: boom" in text
    assert "[4. Failover precision](#4-failover-precision) | **not measured**" in text
    assert '"runs": [1.5]' in text
    assert "the run took 2 min 5 s" in text


def test_usage_sampler_counts_cpu_and_memory_of_a_whole_process_tree() -> None:
    burn = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\ntime.sleep(5)"
    launcher = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}])"
    parent = subprocess.Popen([sys.executable, "-c", launcher])
    try:
        sampler = UsageSampler("tool", "test", {"root": parent.pid}, lambda _r, _p, root: "root" if root else "child")
        sampler.start()
        deadline = time.monotonic() + 60  # the child burns 0.6 CPU seconds; slow under load
        while (
            time.monotonic() < deadline
            and sum(sum(child.cpu_times()[:2]) for child in psutil.Process(parent.pid).children()) < 0.6
        ):
            time.sleep(0.2)
        usage = sampler.finish(records=1000)
    finally:
        for process in [*psutil.Process(parent.pid).children(recursive=True), psutil.Process(parent.pid)]:
            process.kill()
        parent.wait()
    assert usage.cpu_s["child"] >= 0.5
    assert usage.processes == {"root": 1, "child": 1}
    assert usage.peak_total_rss_mib >= usage.peak_rss_mib["child"] > 1
    assert sampler.finish() is usage


def test_the_replica_helpers_answer_is_found_among_client_log_lines_and_rated_first_to_last() -> None:
    answer = parse_answer(
        "[main] WARN AdminClient something\n"
        '{"partitions":12,"first_micros":500000,"copied_micros":2500000,"in_sync_micros":2600000}\n'
    )
    assert answer == {"partitions": 12, "first_micros": 500000, "copied_micros": 2500000, "in_sync_micros": 2600000}
    copy = ReplicaCopy("1 KiB", 100_000, 100 * 1024 * 1024, 0.5, 2.5, 2.6)
    assert (copy.seconds, copy.records_per_s, copy.mib_per_s) == (2.0, 50_000, 50.0)


def test_the_wan_section_gives_mm2_the_distant_source_settings_the_docs_recommend_and_strait_none() -> None:
    setup = MirrorSetup("src", "tgt", topics="t", tasks=1, source_consumer=recommended(MM2, 150))
    props = mirror_properties(setup, "far:9092", "near:9092")
    assert props["src.consumer.max.partition.fetch.bytes"] == str(4 * 1024 * 1024)
    assert props["src.consumer.receive.buffer.bytes"] == "-1"
    assert dict(recommended(MM2, 50))["max.partition.fetch.bytes"] == str(2 * 1024 * 1024)
    assert recommended(STRAIT, 150) == ()
    plain = mirror_properties(MirrorSetup("src", "tgt", topics="t", tasks=1), "far:9092", "near:9092")
    assert not [key for key in plain if key.startswith("src.consumer.")]
