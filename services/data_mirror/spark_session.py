"""Build the SparkSession: local[*] by default, any master by configuration, loopback-only by default."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

LOCAL_DEFAULTS = {
    "spark.app.name": "strait-data-mirror",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",  # its bar is not JSON and never ends with long-lived jobs
    "spark.python.worker.reuse": "true",
    "spark.task.maxFailures": "1",
    "spark.driver.memory": "1g",
}


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
    return conf


def start_spark(conf: Mapping[str, str]) -> SparkSession:
    """Start (or join) the session with `conf`."""
    # RDD functions run under PYSPARK_PYTHON, not the spark.pyspark.python setting: keep workers on our venv.
    os.environ.setdefault("PYSPARK_PYTHON", conf["spark.pyspark.python"])
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", conf["spark.pyspark.driver.python"])
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session
