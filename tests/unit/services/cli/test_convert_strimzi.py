"""`strait convert-strimzi`: a Strimzi KafkaMirrorMaker2 resource becomes a properties file every Strait service
reads, with its secrets read from the mounted Secrets, and whatever has no equivalent is named, not dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config import load_mm2_config
from tests.unit.services.cli.conftest import run_cli

RESOURCE = """
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaMirrorMaker2
metadata:
  name: dr-mirror
spec:
  version: 3.9.0
  replicas: 1
  connectCluster: "dr"
  clusters:
    - alias: "prod"
      bootstrapServers: prod-kafka-bootstrap:9093
      tls:
        trustedCertificates:
          - secretName: prod-cluster-ca-cert
            certificate: ca.crt
      authentication:
        type: scram-sha-512
        username: mirror
        passwordSecret:
          secretName: mirror-user
          password: password
    - alias: "dr"
      bootstrapServers: dr-kafka-bootstrap:9092
      config:
        config.storage.replication.factor: 3
  mirrors:
    - sourceCluster: "prod"
      targetCluster: "dr"
      topicsPattern: "orders.*|payments"
      topicsExcludePattern: ".*-internal"
      groupsPattern: ".*"
      sourceConnector:
        tasksMax: 4
        config:
          replication.factor: 3
          sync.topic.acls.enabled: "false"
      checkpointConnector:
        config:
          emit.checkpoints.interval.seconds: 10
          sync.group.offsets.enabled: "true"
"""


def _secrets(tmp_path: Path) -> Path:
    secrets = tmp_path / "secrets"
    (secrets / "prod-cluster-ca-cert").mkdir(parents=True)
    certificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    (secrets / "prod-cluster-ca-cert" / "ca.crt").write_text(certificate)
    (secrets / "mirror-user").mkdir()
    (secrets / "mirror-user" / "password").write_text("s3cret-pw")
    return secrets


def test_a_mirror_maker_2_resource_becomes_a_config_strait_reads(tmp_path: Path) -> None:
    resource = tmp_path / "mm2.yaml"
    resource.write_text(RESOURCE)
    secrets = _secrets(tmp_path)
    out = tmp_path / "strait.properties"
    result = run_cli("convert-strimzi", str(resource), "--out", str(out), "--secrets-dir", str(secrets))
    assert result.returncode == 0, result.stderr
    assert "not converted: mirror prod->dr sourceConnector.tasksMax" in result.stderr
    assert "s3cr" not in out.read_text(), "secrets stay in the Secrets"
    validated = run_cli("validate-config", str(out))
    assert validated.returncode == 0, validated.stderr
    assert "prod->dr" in validated.stdout

    config = load_mm2_config(out, env={})
    (flow,) = config.enabled_flows
    assert (flow.source, flow.target) == ("prod", "dr")
    assert flow.settings.topics == ("orders.*|payments",)
    assert flow.settings.topics_exclude == (".*-internal",)
    assert flow.settings.emit_checkpoints_interval_s == 10
    assert flow.settings.sync_group_offsets_enabled is True
    assert flow.emits_heartbeats is False, "Strimzi ran no heartbeat connector for this mirror"
    prod = config.clusters["prod"].producer_props()
    assert prod["security.protocol"] == "SASL_SSL"
    assert prod["sasl.mechanism"] == "SCRAM-SHA-512"
    assert 'username="mirror"' in prod["sasl.jaas.config"]
    assert "BEGIN CERTIFICATE" in prod["ssl.truststore.certificates"]
    assert "security.protocol" not in config.clusters["dr"].producer_props()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Kafka\nspec: {}\n", "no KafkaMirrorMaker2 resource"),
        (RESOURCE.replace('targetCluster: "dr"', 'targetCluster: "qa"'), "cluster 'qa' is not in spec.clusters"),
        (RESOURCE.replace("type: scram-sha-512", "type: oauth"), None),
        ("kind: [unclosed\n", "is not YAML"),
    ],
)
def test_what_cannot_be_converted_is_named(tmp_path: Path, text: str, message: str | None) -> None:
    resource = tmp_path / "mm2.yaml"
    resource.write_text(text)
    result = run_cli("convert-strimzi", str(resource))
    if message is None:  # converted, with the unsupported part named on stderr and in the file
        assert result.returncode == 0, result.stderr
        assert "authentication type 'oauth'" in result.stderr
        assert "# NOT CONVERTED: cluster prod: authentication type 'oauth'" in result.stdout
        return
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
