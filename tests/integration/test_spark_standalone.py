"""The Spark standalone harness runs real jobs, and a job survives a worker killed under it."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from shared.localkafka.processes import die_with_parent
from shared.localspark import SparkStandaloneCluster, kill_tree

# Runs in its own interpreter so no SparkContext or JVM gateway leaks into the pytest process.
DRIVER = """
import json, os, sys, time
from pathlib import Path
from pyspark.sql import SparkSession

master, markers, secret = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
spark = (
    SparkSession.builder.master(master)
    .appName("strait-harness-check")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.authenticate", "true")
    .config("spark.authenticate.secret", secret)
    .config("spark.executor.memory", "512m")
    .config("spark.cores.max", "4")
    .config("spark.scheduler.minRegisteredResourcesRatio", "1.0")  # wait for both executors before job 1
    .config("spark.scheduler.maxRegisteredResourcesWaitingTime", "60s")
    .getOrCreate()
)
sc = spark.sparkContext

def probe(index, rows):
    time.sleep(0.5)  # long enough that all four tasks overlap, so both executors get work
    yield {"partition": index, "pid": os.getpid(), "python": sys.executable}

def hold(index, rows):
    from pyspark import TaskContext
    attempt = TaskContext.get().attemptNumber()
    (markers / f"{index}-{attempt}-{os.getpid()}").touch()
    deadline = time.monotonic() + 30
    while not (markers / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    yield {"partition": index, "pid": os.getpid(), "attempt": attempt}

def report(name, rows):
    print("RESULT " + json.dumps({"job": name, "rows": rows}), flush=True)

report("probe", sc.parallelize(range(4), 4).mapPartitionsWithIndex(probe).collect())
sys.stdin.readline()
report("hold", sc.parallelize(range(4), 4).mapPartitionsWithIndex(hold).collect())
spark.stop()
"""


class Driver:
    """The driver subprocess, read line by line with deadlines so a hung Spark fails the test instead of hanging."""

    def __init__(self, cluster: SparkStandaloneCluster, markers: Path, log_path: Path) -> None:
        self.log_path = log_path
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", DRIVER, cluster.master_url, str(markers), cluster.secret],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                text=True,
                preexec_fn=die_with_parent,  # its JVM exits when its stdin closes, so nothing outlives pytest
            )
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def result(self, job: str, timeout_s: float) -> list[dict[str, Any]]:
        """The rows of the named job, or a failure carrying the driver's log."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            if line.startswith("RESULT "):
                payload = json.loads(line.removeprefix("RESULT "))
                assert payload["job"] == job
                rows: list[dict[str, Any]] = payload["rows"]
                return rows
        pytest.fail(f"driver gave no {job} result (exit {self.process.poll()}):\n{self.log_tail()}")

    def go_on(self) -> None:
        """Let the driver submit its next job."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def log_tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def close(self) -> None:
        kill_tree(self.process.pid)
        self.process.wait(timeout=10)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def dead(pid: int) -> bool:
    """Gone, or a zombie its new parent has not reaped yet."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def owner(cluster: SparkStandaloneCluster, pid: int) -> int:
    """Which worker's process tree a Python task ran in (-1 for none)."""
    ancestors = {parent.pid for parent in psutil.Process(pid).parents()}
    return next((index for index, worker in enumerate(cluster.workers) if worker.pid in ancestors), -1)


@pytest.mark.timeout(180)
def test_jobs_run_across_workers_and_survive_a_killed_worker(
    spark_standalone: SparkStandaloneCluster, tmp_path: Path
) -> None:
    cluster = spark_standalone
    markers = tmp_path / "markers"
    markers.mkdir()
    driver = Driver(cluster, markers, tmp_path / "driver.log")
    try:
        probe = driver.result("probe", timeout_s=90)
        assert sorted(row["partition"] for row in probe) == [0, 1, 2, 3]
        assert {row["python"] for row in probe} == {sys.executable}, "executors must run the venv's python"
        assert {owner(cluster, row["pid"]) for row in probe} == {0, 1}, "both workers should have run tasks"

        driver.go_on()
        deadline = time.monotonic() + 60
        while len(started := list(markers.iterdir())) < 4:
            assert time.monotonic() < deadline, f"tasks did not all start:\n{driver.log_tail()}"
            time.sleep(0.1)
        running = {int(name.split("-")[0]): int(name.split("-")[2]) for name in (m.name for m in started)}
        doomed = {partition for partition, pid in running.items() if owner(cluster, pid) == 0}
        assert doomed, "worker 0 should be running some of the held tasks"

        killed_at = time.monotonic()
        cluster.kill_worker(0)
        assert not cluster.workers[0].is_running()
        assert all(dead(running[partition]) for partition in doomed), "worker 0's Python tasks survived it"
        worker_0_port = cluster.worker_ports[0][0]
        while worker_0_port in cluster.alive_worker_ports():
            assert time.monotonic() - killed_at < 25, "master never noticed the dead worker"
            time.sleep(0.2)
        print(f"master marked worker 0 dead after {time.monotonic() - killed_at:.1f}s")
        (markers / "release").touch()

        held = driver.result("hold", timeout_s=60)
        assert sorted(row["partition"] for row in held) == [0, 1, 2, 3]
        assert {owner(cluster, row["pid"]) for row in held} == {1}, "every result must come from worker 1"
        retried = {row["partition"] for row in held if row["attempt"] > 0}
        assert retried == doomed, "exactly the tasks lost with worker 0 are re-run"
        assert cluster.alive_worker_ports() == {cluster.worker_ports[1][0]}
    finally:
        driver.close()
    cluster.restart_worker(0)  # the cluster is shared by the session: leave it whole
    assert cluster.alive_worker_ports() == {port for port, _ in cluster.worker_ports}
