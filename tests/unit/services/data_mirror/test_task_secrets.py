"""Client secrets never ride in a pickled task spec; the task gets them back from the driver's broadcast."""

from __future__ import annotations

import pickle

import pytest

from services.data_mirror.plan import FlowClients
from services.data_mirror.task_secrets import MissingSecret, SecretVault, with_secrets
from services.data_mirror.work import PartitionWork
from shared.config import parse_mm2_config

PASSWORD = "pa55-w0rd-xyz"
KEY_PASSWORD = "k3y-pa55-abc"
CONFIG = {
    "clusters": "A, B",
    "A.bootstrap.servers": "a:9092",
    "B.bootstrap.servers": "b:9092",
    "A->B.enabled": "true",
    "A.security.protocol": "SASL_SSL",
    "A.sasl.mechanism": "SCRAM-SHA-512",
    "A.sasl.jaas.config": (
        f'org.apache.kafka.common.security.scram.ScramLoginModule required username="mm2" password="{PASSWORD}";'
    ),
    "B.ssl.key.password": KEY_PASSWORD,
}


def _flow_clients(vault: SecretVault) -> FlowClients:
    flow = parse_mm2_config(CONFIG, env={}).flow("A", "B")
    return FlowClients(
        flow=flow.name,
        source_consumer=vault.withhold(flow.source_consumer_props()),
        source_admin=vault.withhold(flow.source_admin_props()),
        target_producer=vault.withhold(flow.target_producer_props()),
        target_consumer=vault.withhold(flow.target_consumer_props()),
        sync_producer=vault.withhold(flow.target_producer_props()),
        offset_syncs_topic="mm2-offset-syncs.B.internal",
        progress_topic="strait.offsets.A.internal",
        control_topic="strait.control.internal",
        exactly_once=False,
        copy_batches=False,
        offset_lag_max=100,
        emit_offset_syncs=True,
        reset_to_latest=False,
    )


def test_a_pickled_task_spec_holds_no_secret_and_the_task_gets_every_setting_back() -> None:
    vault = SecretVault()
    spec = _flow_clients(vault).task(
        0,
        1,
        (PartitionWork("orders", 0, "A.orders"),),
        control_from_offset=0,
        commit_interval_ms=1000,
        blocked_retry_s=30,
    )
    pickled = pickle.dumps(spec)
    assert PASSWORD.encode() not in pickled
    assert KEY_PASSWORD.encode() not in pickled
    assert b"a:9092" in pickled, "what is not secret still travels as it is"

    restored = with_secrets(pickle.loads(pickled), pickle.loads(pickle.dumps(vault.values)))
    flow = parse_mm2_config(CONFIG, env={}).flow("A", "B")
    assert restored.source_consumer == flow.source_consumer_props()
    assert restored.target_producer == flow.target_producer_props()
    assert restored.target_producer["ssl.key.password"] == KEY_PASSWORD


def test_the_same_secret_has_one_placeholder_and_placeholders_reveal_nothing() -> None:
    vault = SecretVault()
    first = vault.withhold({"sasl.jaas.config": "x password=y;", "ssl.key.password": "same"})
    second = vault.withhold({"ssl.keystore.password": "same"})
    assert first["ssl.key.password"] == second["ssl.keystore.password"]
    assert "same" not in first["ssl.key.password"]
    assert len(vault.values) == 2


def test_a_placeholder_the_executor_was_not_given_fails_the_task_by_name() -> None:
    vault = SecretVault()
    spec = _flow_clients(vault).task(0, 1, (), control_from_offset=0, commit_interval_ms=1000, blocked_retry_s=30)
    with pytest.raises(MissingSecret, match=r"sasl\.jaas\.config"):
        with_secrets(spec, {})
