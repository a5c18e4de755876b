"""Build the SparkSession: local[*] by default, any master by configuration, loopback-only by default."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

LOCAL_DEFAULTS = {
    "spark.app.name": "strait-data-mirror",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # its bar is not JSON and never ends with long-lived jobs
    "spark.python.worker.reuse": "true",
    "spark.task.maxFailures": "1",
    "spark.driver.memory": "1g",
}
# Spark's JVM logs JSON lines (see the file); a user's own log4j configuration in extraJavaOptions wins.
JSON_LOG4J = Path(__file__).with_name("log4j2-json.properties")
_DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def spark_conf(top_level: Mapping[str, str], master_override: str = "") -> dict[str, str]:
    """Strait's defaults, then every `spark.*` key from the config file, then the master override."""
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
    java_options = conf.get(_DRIVER_JAVA_OPTIONS, "")
    if "log4j2.configurationFile" not in java_options:
        conf[_DRIVER_JAVA_OPTIONS] = f"-Dlog4j2.configurationFile={JSON_LOG4J.as_uri()} {java_options}".strip()
    return conf


def start_spark(conf: Mapping[str, str]) -> SparkSession:
    """Start (or join) the session with `conf`."""
    # RDD functions run under PYSPARK_PYTHON, not the spark.pyspark.python setting: keep workers on our venv.
    os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", conf["spark.pyspark.driver.python"])
    if "spark.driver.bindAddress" in conf:  # Spark would otherwise warn that the host name resolves to loopback
        os.environ.setdefault("SPARK_LOCAL_IP", conf["spark.driver.bindAddress"])
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
