"""Spark settings: local[*] on loopback by default; the config's spark.* keys and the override win."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from services.data_mirror.jvm_start import ARCHIVE_ENV, archive_path
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
    assert "-Dlog4j2.configurationFile=file:" in options
    assert options.endswith(" -Xss4m")
    assert "log4j2-json.properties" in options
    own = "-Dlog4j2.configurationFile=/etc/mine.xml"
    options = spark_conf({"spark.driver.extraJavaOptions": own})["spark.driver.extraJavaOptions"]
    assert options.endswith(f" {own}")
    assert "log4j2-json" not in options


def test_the_driver_jvm_starts_with_c1_and_the_class_archive_when_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "spark.jsa"
    monkeypatch.setenv(ARCHIVE_ENV, str(archive))
    options = spark_conf({"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"})["spark.driver.extraJavaOptions"]
    assert options.startswith("-XX:TieredStopAtLevel=1 ")
    assert options.endswith(" -XX:TieredStopAtLevel=4"), "the user's options come last, so they win"
    assert "SharedArchiveFile" not in options, "no archive built: none named"
    archive.write_bytes(b"built")
    options = spark_conf({})["spark.driver.extraJavaOptions"]
    assert f"-XX:SharedArchiveFile={archive} " in options
    monkeypatch.setenv(ARCHIVE_ENV, "")
    assert archive_path() is None
    assert "SharedArchiveFile" not in spark_conf({})["spark.driver.extraJavaOptions"]


def test_the_default_archive_is_one_per_pyspark_and_java_in_this_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ARCHIVE_ENV, raising=False)
    path = archive_path()
    assert path is not None
    assert path.parent == Path(sys.prefix) / "share" / "strait"
    assert path.name.startswith("spark-")
    other_java = tmp_path / "bin" / "java"
    other_java.parent.mkdir()
    other_java.write_bytes(b"another java")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert archive_path() != path, "another Java installation gets an archive of its own"


def test_a_path_with_white_space_is_never_handed_to_the_jvm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "with space" / "spark.jsa"
    archive.parent.mkdir()
    archive.write_bytes(b"built")
    monkeypatch.setenv(ARCHIVE_ENV, str(archive))
    assert "SharedArchiveFile" not in spark_conf({})["spark.driver.extraJavaOptions"]


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


def test_a_standalone_master_gets_one_single_core_executor_per_slot_so_the_slots_spread_over_the_workers() -> None:
    conf = spark_conf({"spark.master": "spark://h:7077", "spark.authenticate.secret": "s"}, slots=4)
    assert (conf["spark.executor.cores"], conf["spark.cores.max"]) == ("1", "4")


def test_the_configs_own_executor_sizing_wins_and_other_masters_keep_theirs() -> None:
    packed = spark_conf(
        {"spark.master": "spark://h:7077", "spark.authenticate.secret": "s", "spark.executor.cores": "4"}, slots=4
    )
    assert packed["spark.executor.cores"] == "4"
    assert "spark.cores.max" not in packed
    assert "spark.executor.cores" not in spark_conf({"spark.master": "local[4]"}, slots=4)
    assert "spark.cores.max" not in spark_conf({"spark.master": "spark://h:7077", "spark.authenticate.secret": "s"})


def test_the_driver_jvm_keeps_a_compact_heap_unless_the_user_sizes_or_chooses_its_collector() -> None:
    conf = spark_conf({})
    options = conf["spark.driver.extraJavaOptions"].split()
    assert conf["spark.driver.memory"] == "512m", "records never enter the driver's JVM"
    assert "-Xms32m" in options
    assert "-XX:+UseSerialGC" in options
    mine = spark_conf({"spark.driver.memory": "2g", "spark.driver.extraJavaOptions": "-XX:+UseG1GC -Xms1g"})
    options = mine["spark.driver.extraJavaOptions"].split()
    assert mine["spark.driver.memory"] == "2g"
    assert "-XX:+UseSerialGC" not in options, "two collectors would stop the JVM from starting"
    assert options[-2:] == ["-XX:+UseG1GC", "-Xms1g"], "the user's options come last, so they win"


def test_python_workers_fork_from_a_daemon_that_has_the_copy_path_loaded() -> None:
    """Each worker would otherwise import the copy path itself (0.4 s of CPU apiece); a user's daemon module wins."""
    module = spark_conf({})["spark.python.daemon.module"]
    loaded = subprocess.run(
        [sys.executable, "-c", f"import sys, {module}; print('services.data_mirror.task_entry' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "True"
    assert spark_conf({"spark.python.daemon.module": "mine"})["spark.python.daemon.module"] == "mine"
