"""Which harness JVMs start from the brokers' class-data archive: brokers and the storage tool, once it exists for
their classpath and Java; never MirrorMaker 2 (the benchmarks time its start as it ships) or another classpath."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.localkafka import class_archive
from shared.localkafka.processes import JvmProcess

CLASSPATH = "/jars/kafka.jar:/jars/clients.jar"


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr(class_archive, "CACHE_DIR", tmp_path)
    return tmp_path


def test_a_broker_starts_from_the_archive_once_it_exists(cache: Path) -> None:
    assert class_archive.sharing_options("kafka.Kafka", CLASSPATH) == []
    archive = class_archive.archive_path(CLASSPATH)
    archive.write_bytes(b"archive")
    options = class_archive.sharing_options("kafka.Kafka", CLASSPATH)
    assert options[0] == f"-XX:SharedArchiveFile={archive}"
    assert class_archive.sharing_options("kafka.tools.StorageTool", CLASSPATH) == options
    assert class_archive.sharing_options("org.apache.kafka.connect.mirror.MirrorMaker", CLASSPATH) == []


def test_another_classpath_has_an_archive_of_its_own(cache: Path) -> None:
    class_archive.archive_path(CLASSPATH).write_bytes(b"archive")
    assert class_archive.sharing_options("kafka.Kafka", CLASSPATH + ":/jars/extra.jar") == []


def test_the_option_goes_on_the_kafka_classpath_jvms_only(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("shared.localkafka.processes.kafka_classpath", lambda quiet: CLASSPATH)
    class_archive.archive_path(CLASSPATH).write_bytes(b"archive")
    broker = JvmProcess("kafka.Kafka", ["server.properties"], log_path=cache / "broker.log").command()
    helper = JvmProcess("kafka.Kafka", [], log_path=cache / "h.log", classpath="/other.jar").command()
    mm2 = JvmProcess("org.apache.kafka.connect.mirror.MirrorMaker", [], log_path=cache / "mm2.log").command()
    assert any(option.startswith("-XX:SharedArchiveFile=") for option in broker)
    assert broker.index("-cp") > broker.index(f"-XX:SharedArchiveFile={class_archive.archive_path(CLASSPATH)}")
    assert not any(option.startswith("-XX:SharedArchiveFile=") for option in helper + mm2)
