"""A Spark standalone cluster on loopback from the pyspark wheel alone, so tests can kill real workers."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import secrets
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from shared.localkafka.jars import HarnessError
from shared.localkafka.ports import free_port
from shared.localkafka.processes import JvmProcess

_PYSPARK = importlib.util.find_spec("pyspark")  # located, not imported: importing pyspark is slow
SPARK_HOME = Path(_PYSPARK.origin).resolve().parent if _PYSPARK and _PYSPARK.origin else Path("pyspark-not-installed")
# What Spark's own launcher adds on Java 17+ (JavaModuleOptions); netty and Kryo need the opened packages.
_OPENED = (
    *("java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net", "java.nio", "java.util"),
    *("java.util.concurrent", "java.util.concurrent.atomic", "jdk.internal.ref", "sun.nio.ch", "sun.nio.cs"),
    *("sun.security.action", "sun.util.calendar"),
)
_MASTER, _WORKER = "org.apache.spark.deploy.master.Master", "org.apache.spark.deploy.worker.Worker"
_MODULE_OPTIONS = [
    "-XX:+IgnoreUnrecognizedVMOptions",
    "-Dio.netty.tryReflectionSetAccessible=true",
    *(f"--add-opens=java.base/{package}=ALL-UNNAMED" for package in _OPENED),
]


def kill_tree(pid: int, timeout_s: float = 10) -> None:
    """SIGKILL a process and all its descendants, freezing them first so none can fork an unseen child."""
    seen: dict[int, psutil.Process] = {}
    fresh = [pid]
    while fresh:  # stop each process before listing its children, until a pass finds nobody new
        for new_pid in fresh:
            with contextlib.suppress(psutil.NoSuchProcess):
                seen[new_pid] = psutil.Process(new_pid)
                seen[new_pid].suspend()
        fresh = []
        for process in list(seen.values()):
            with contextlib.suppress(psutil.NoSuchProcess):
                fresh += [child.pid for child in process.children() if child.pid not in seen]
    for process in seen.values():
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    deadline = time.monotonic() + timeout_s  # psutil.wait_procs polls too slowly (about 2 s here)
    while time.monotonic() < deadline and any(_alive(process) for process in seen.values()):
        time.sleep(0.05)


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class SparkStandaloneCluster:
    """One master and N workers bound to 127.0.0.1, each JVM dying with this Python process."""

    def __init__(
        self,
        work_dir: Path,
        *,
        workers: int = 2,
        cores_per_worker: int = 2,
        memory_mb: int = 1024,
        worker_timeout_s: int = 10,
    ) -> None:
        self.port, self.web_ui_port = free_port(), free_port()
        # Authenticated as a production cluster should be: drivers pass this as spark.authenticate.secret.
        self.secret = secrets.token_hex(16)
        self.worker_ports = [(free_port(), free_port()) for _ in range(workers)]
        env = {
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_SCALA_VERSION": "2.13",  # the worker's executor launcher cannot infer it from a pip install
            "SPARK_LOCAL_IP": "127.0.0.1",
            # Executors run the driver's PYSPARK_PYTHON (default "python3", looked up on the executor's PATH);
            # putting the venv first on the PATH makes that default the venv's interpreter too.
            "PYSPARK_PYTHON": sys.executable,
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
        }
        # A lower worker timeout bounds how long a frozen (not crashed) worker counts as alive; a port taken
        # between free_port() and bind fails loudly instead of Spark quietly moving to the next port; the REST
        # submission server would take the fixed port 6066.
        options = [*_MODULE_OPTIONS, f"-Dspark.worker.timeout={worker_timeout_s}", "-Dspark.port.maxRetries=0"]
        options.append("-Dspark.master.rest.enabled=false")
        options += ["-Dspark.authenticate=true", f"-Dspark.authenticate.secret={self.secret}"]
        spark_jvm = functools.partial(JvmProcess, jvm_options=options, classpath=str(SPARK_HOME / "jars" / "*"))
        master_args = ["--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.web_ui_port)]
        self.master = spark_jvm(_MASTER, master_args, log_path=work_dir / "master.log", env=env)
        self.workers: list[JvmProcess] = []
        for index, (port, web_port) in enumerate(self.worker_ports):
            worker_dir = work_dir / f"worker-{index}"
            args = ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web_port)]
            args += ["--cores", str(cores_per_worker), "--memory", f"{memory_mb}M", "--work-dir", str(worker_dir)]
            worker_env = {**env, "SPARK_LOCAL_DIRS": str(worker_dir / "local")}
            log_path = worker_dir / "worker.log"
            self.workers.append(spark_jvm(_WORKER, [*args, self.master_url], log_path=log_path, env=worker_env))

    @property
    def master_url(self) -> str:
        """What a driver passes as its master."""
        return f"spark://127.0.0.1:{self.port}"

    def state(self) -> dict[str, Any]:
        """The master's own view (web UI JSON), the only place that says which workers it counts as alive."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.web_ui_port}/json/", timeout=5) as response:
            state: dict[str, Any] = json.load(response)
        return state

    def alive_worker_ports(self) -> set[int]:
        """Ports of the workers the master believes ALIVE, to see when it has noticed a death."""
        return {int(worker["port"]) for worker in self.state()["workers"] if worker["state"] == "ALIVE"}

    def start(self, timeout_s: float = 90) -> SparkStandaloneCluster:
        """Launch everything and block until the master reports every worker ALIVE."""
        self.master.start()
        for worker in self.workers:
            worker.start()
        self._wait_alive(range(len(self.workers)), timeout_s)
        return self

    def _wait_alive(self, indexes: range, timeout_s: float) -> None:
        wanted = {self.worker_ports[index][0] for index in indexes}
        deadline = time.monotonic() + timeout_s
        while True:
            for process in (self.master, *(self.workers[index] for index in indexes)):
                if not process.is_running():
                    self.stop()
                    raise HarnessError(f"Spark {process.main_class} exited:\n{process.log_tail()}")
            with contextlib.suppress(OSError, ValueError):
                if wanted <= self.alive_worker_ports():
                    return
            if time.monotonic() > deadline:
                self.stop()
                raise HarnessError(f"Spark workers not ALIVE after {timeout_s}s:\n{self.master.log_tail()}")
            time.sleep(0.5)

    def kill_worker(self, index: int) -> None:
        """Crash one worker with its executors and their Python workers, as losing the machine would."""
        worker = self.workers[index]
        if worker.pid is not None and worker.is_running():
            kill_tree(worker.pid)
        worker.kill()  # reap it and forget it

    def restart_worker(self, index: int, timeout_s: float = 60) -> None:
        """Bring a killed worker back on the same ports, so a shared cluster is whole for the next test."""
        if not self.workers[index].is_running():
            self.workers[index].start()
        self._wait_alive(range(index, index + 1), timeout_s)

    def stop(self) -> None:
        """Kill every process this cluster started; safe to call twice."""
        for index in range(len(self.workers)):
            self.kill_worker(index)
        self.master.stop(timeout_s=5)

    def __enter__(self) -> SparkStandaloneCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
