"""Spark settings: local[*] on loopback by default; the config's spark.* keys and the override win."""

from __future__ import annotations

from services.data_mirror.spark_session import spark_conf


def test_defaults_are_local_and_loopback_only() -> None:
    conf = spark_conf({})
    assert conf["spark.master"] == "local[*]"
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "false"


def test_config_keys_pass_through_and_the_flag_overrides_master() -> None:
    conf = spark_conf({"spark.master": "spark://h:7077", "spark.executor.memory": "2g", "topics": "x"}, "local[2]")
    assert conf["spark.master"] == "local[2]"
    assert conf["spark.executor.memory"] == "2g"
    assert "topics" not in conf


def test_a_cluster_master_is_not_pinned_to_loopback() -> None:
    conf = spark_conf({"spark.master": "k8s://https://api:6443"})
    assert "spark.driver.bindAddress" not in conf


def test_the_driver_jvm_logs_json_unless_the_user_brings_a_log4j_configuration() -> None:
    options = spark_conf({"spark.driver.extraJavaOptions": "-Xss4m"})["spark.driver.extraJavaOptions"]
    assert options.startswith("-Dlog4j2.configurationFile=file:")
    assert options.endswith(" -Xss4m")
    assert "log4j2-json.properties" in options
    own = "-Dlog4j2.configurationFile=/etc/mine.xml"
    assert spark_conf({"spark.driver.extraJavaOptions": own})["spark.driver.extraJavaOptions"] == own
