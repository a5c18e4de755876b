"""`strait dr check` on a real cluster with an authorizer: each problem a failover or failback would meet is found and
named on a line of its own, and a fixed one is no longer reported. Nothing moves.

Both aliases name the SASL cluster (as acl-sync's tests do): S->T copies `dr-<id>-.*` to `S.dr-<id>-...`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka import TopicPartition

from shared.filters import AclBindingSpec
from shared.kafka.acl_admin import to_binding
from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from tests.integration.test_topic_sync import write_config
from tests.support.kafka_io import commit_offsets, make_topic, produce


def dr_check(config: Path, flow: str = "S->T") -> tuple[int, list[str]]:
    """`strait dr check`: exit code and the lines it printed."""
    done = subprocess.run(
        [sys.executable, "-m", "services.cli", "dr", "check", "--flow", flow, "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    return done.returncode, [line for line in done.stdout.splitlines() if line.strip()]


def test_dr_check_names_a_stale_checkpoint_a_missing_acl_and_a_missing_reverse_flow(
    secure_cluster: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    props = secure_cluster.client_properties()
    topic, remote, group = f"dr-{unique}-orders", f"S.dr-{unique}-orders", f"app-{unique}"
    make_topic(props, topic, partitions=1)
    make_topic(props, remote, partitions=1)
    produce(props, topic, [(None, f"r{i}".encode()) for i in range(20)])
    commit_offsets(props, group, [TopicPartition(topic, 0, 12)])  # no checkpoint service: never checkpointed
    reader = AclBindingSpec("TOPIC", topic, "LITERAL", f"User:reader-{unique}", "*", "READ", "ALLOW")
    admin = confluent_admin(props)
    for future in admin.create_acls([to_binding(reader)]).values():
        future.result(timeout=30)
    clusters = {"S": (secure_cluster, None), "T": (secure_cluster, None)}
    settings = {"topics": f"dr-{unique}-.*", "groups": group}
    config = write_config(tmp_path / "one-way.properties", clusters, {"S->T": settings})

    code, lines = dr_check(config)
    assert code == 3, lines
    text = "\n".join(lines)
    assert "no reverse flow: set T->S.enabled=true" in text, text
    assert f"checkpoints behind the last commit: group {group} {topic}-0 committed 12, checkpointed none" in text, text
    assert "ACL(s) missing on T" in text, text
    assert f"User:reader-{unique}" in text, text
    assert all(line.startswith("S->T: ") for line in lines), "one line per problem, each naming the flow"

    # Fixed: the reverse flow configured, the ACL on the remote topic. What is still wrong is still named.
    on_remote = AclBindingSpec("TOPIC", remote, "LITERAL", f"User:reader-{unique}", "*", "READ", "ALLOW")
    for future in admin.create_acls([to_binding(on_remote)]).values():
        future.result(timeout=30)
    both_ways = write_config(tmp_path / "both.properties", clusters, {"S->T": settings, "T->S": {"topics": "none"}})
    code, lines = dr_check(both_ways)
    text = "\n".join(lines)
    assert code == 3, lines
    assert "no reverse flow" not in text, text
    assert "ACL(s) missing" not in text, text
    assert f"group {group} {topic}-0 committed 12" in text, text
