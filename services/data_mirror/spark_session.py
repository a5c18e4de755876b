"""Build the SparkSession: local[*] by default, any master by configuration, loopback-only by default."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from services.data_mirror.jvm_start import driver_start_options
from shared.errors import ConfigError

LOCAL_DEFAULTS = {
    "spark.app.name": "strait-data-mirror",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # its bar is not JSON and never ends with long-lived jobs
    "spark.python.worker.reuse": "true",
    "spark.python.daemon.module": "services.data_mirror.worker_daemon",  # workers fork with the copy path loaded
    "spark.task.maxFailures": "1",
    # Records never enter the driver's JVM (tasks return small results); Spark refuses less than 450 MiB.
    "spark.driver.memory": "512m",
}
# Off local mode, Spark's RPC and block transfers cross the network and carry task specs (client settings) and
# records: authenticated and encrypted unless the config says otherwise.
PROTECTED_OFF_LOCAL = {
    "spark.authenticate": "true",
    "spark.network.crypto.enabled": "true",
    "spark.io.encryption.enabled": "true",
}
# Masters whose deployment makes a secret per application; every other one needs spark.authenticate.secret.
_SECRET_MADE_BY_MASTER = ("yarn", "k8s://")
STANDALONE = "spark://"
# Spark's JVM logs JSON lines (see the file); a user's own log4j configuration in extraJavaOptions wins.
JSON_LOG4J = Path(__file__).with_name("log4j2-json.properties")
_DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def spark_conf(top_level: Mapping[str, str], master_override: str = "", *, slots: int = 0) -> dict[str, str]:
    """Strait's defaults, then every `spark.*` key from the config file, then the master override.

    `slots`: the copy tasks the driver will keep running (0: not fixed, Spark's parallelism decides)."""
    conf = dict(LOCAL_DEFAULTS)
    conf["spark.pyspark.python"] = sys.executable
    conf["spark.pyspark.driver.python"] = sys.executable
    conf.update({key: value for key, value in top_level.items() if key.startswith("spark.")})
    conf.setdefault("spark.master", "local[*]")
    if master_override:
        conf["spark.master"] = master_override
    if conf["spark.master"].startswith("local"):
        conf.setdefault("spark.driver.host", "127.0.0.1")
        conf.setdefault("spark.driver.bindAddress", "127.0.0.1")
    else:
        _protect(conf)
    if conf["spark.master"].startswith(STANDALONE) and slots:
        _one_executor_per_slot(conf, slots)
    java_options = conf.get(_DRIVER_JAVA_OPTIONS, "")
    if "log4j2.configurationFile" not in java_options:
        java_options = f"-Dlog4j2.configurationFile={JSON_LOG4J.as_uri()} {java_options}"
    # The user's options come last, so they win.
    conf[_DRIVER_JAVA_OPTIONS] = f"{driver_start_options(java_options)} {java_options}".strip()
    return conf


def _one_executor_per_slot(conf: dict[str, str], slots: int) -> None:
    """A standalone master gives an application one executor per worker with all of its cores, and Spark runs each
    slot's one-task job on whichever executor offers a core first: two slots can share a worker while another
    worker idles, and one lost worker then stops both. One core per executor and as many cores as slots make the
    master spread the executors over the workers (spark.deploy.spreadOut) and give every slot its own; a lost
    worker's executors are started again on workers with free cores. Either setting in the config wins."""
    if "spark.executor.cores" in conf or "spark.cores.max" in conf:
        return
    conf["spark.executor.cores"] = "1"
    conf["spark.cores.max"] = str(slots)


def _protect(conf: dict[str, str]) -> None:
    for key, value in PROTECTED_OFF_LOCAL.items():
        conf.setdefault(key, value)
    master = conf["spark.master"]
    has_secret = "spark.authenticate.secret" in conf or "spark.authenticate.secret.file" in conf
    authenticated = conf["spark.authenticate"].strip().lower() == "true"
    if authenticated and not has_secret and not master.startswith(_SECRET_MADE_BY_MASTER):
        raise ConfigError(
            f"spark.master={master}: Spark authentication is on by default off local mode, and this master needs "
            "spark.authenticate.secret (the secret its master and workers run with; ${env:...} or ${file:...} keep "
            "it out of the file); spark.authenticate=false runs without it",
            key="spark.authenticate.secret",
        )


def unprotected_settings(conf: Mapping[str, str]) -> list[str]:
    """The protections a non-local master runs without, because the config turned them off (for a warning)."""
    if conf.get("spark.master", "local").startswith("local"):
        return []
    return [key for key in PROTECTED_OFF_LOCAL if conf.get(key, "").strip().lower() != "true"]


def spark_environment(conf: Mapping[str, str]) -> None:
    """The environment Spark's launcher reads; set before any thread starts Spark (setenv is not thread-safe)."""
    # RDD functions run under PYSPARK_PYTHON, not the spark.pyspark.python setting: keep workers on our venv.
    os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", conf["spark.pyspark.driver.python"])
    if "spark.driver.bindAddress" in conf:  # Spark would otherwise warn that the host name resolves to loopback
        os.environ.setdefault("SPARK_LOCAL_IP", conf["spark.driver.bindAddress"])


def start_spark(conf: Mapping[str, str]) -> SparkSession:
    """Start (or join) the session with `conf`."""
    spark_environment(conf)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
