"""Spark settings: local[*] on loopback by default; the config's spark.* keys and the override win."""

from __future__ import annotations

import pytest

from services.data_mirror.spark_session import spark_conf, unprotected_settings
from shared.errors import ConfigError


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


def test_off_local_mode_spark_traffic_is_authenticated_and_encrypted_by_default() -> None:
    conf = spark_conf({"spark.master": "spark://m:7077", "spark.authenticate.secret": "s"})
    assert (conf["spark.authenticate"], conf["spark.network.crypto.enabled"], conf["spark.io.encryption.enabled"]) == (
        "true",
        "true",
        "true",
    )
    assert unprotected_settings(conf) == []
    assert "spark.authenticate" not in spark_conf({})  # local mode never leaves the process


def test_a_standalone_master_without_a_secret_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"spark.master=spark://m:7077: .* needs spark.authenticate.secret") as info:
        spark_conf({"spark.master": "spark://m:7077"})
    assert info.value.key == "spark.authenticate.secret"
    spark_conf({"spark.master": "k8s://https://api:6443"})  # Kubernetes and YARN make a secret per application
    spark_conf({"spark.master": "yarn"})


def test_turning_protection_off_is_allowed_and_named_for_a_warning() -> None:
    conf = spark_conf({"spark.master": "spark://m:7077", "spark.authenticate": "false"})
    assert unprotected_settings(conf) == ["spark.authenticate"]
    conf = spark_conf(
        {"spark.master": "spark://m:7077", "spark.authenticate.secret": "s", "spark.io.encryption.enabled": "false"}
    )
    assert unprotected_settings(conf) == ["spark.io.encryption.enabled"]
