"""Hostile configs at the library level: size limits, binary files, one-line errors, replication loops."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config import load_mm2_config, parse_mm2_config
from shared.config.cycles import literal_names
from shared.config.properties import MAX_FILE_BYTES, MAX_LINE_CHARS, load_properties_file
from shared.errors import ConfigError

IDENTITY = "IdentityReplicationPolicy"
BASE = {
    "clusters": "A,B,C",
    "A.bootstrap.servers": "a:9092",
    "B.bootstrap.servers": "b:9092",
    "C.bootstrap.servers": "c:9092",
}


def parse(**extra: str) -> None:
    parse_mm2_config({**BASE, **{k.replace("__", "->").replace("_", "."): v for k, v in extra.items()}}, env={})


def refused(props: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_mm2_config({**BASE, **props}, env={})
    return str(info.value)


def test_file_larger_than_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.properties"
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ConfigError, match="larger than"):
        load_properties_file(path)


def test_line_longer_than_the_limit_names_its_key_not_its_value(tmp_path: Path) -> None:
    path = tmp_path / "long.properties"
    path.write_text("a=1\nsecret.password=" + "s" * MAX_LINE_CHARS + "\n")
    with pytest.raises(ConfigError) as info:
        load_properties_file(path)
    assert "long.properties:2" in str(info.value)
    assert "'secret.password'" in str(info.value)
    assert "sss" not in str(info.value)


def test_nul_byte_means_binary_data(tmp_path: Path) -> None:
    path = tmp_path / "bin.properties"
    path.write_bytes(b"clusters=A\n\x00\x01")
    with pytest.raises(ConfigError, match="NUL byte at byte 11"):
        load_properties_file(path)


def test_messages_stay_on_one_line(tmp_path: Path) -> None:
    path = tmp_path / "nl.properties"
    path.write_text("clusters=A\nA.bootstrap.servers=a:1\nfoo\\nbar\\u001b=1\n")
    with pytest.raises(ConfigError) as info:
        load_mm2_config(path, env={})
    assert str(info.value) == "unknown key 'foo\\nbar\\x1b'"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [("(" * 5000 + ")" * 5000, "nested too deeply"), ("a{99999999999}", "repetition number is too large")],
)
def test_regex_of_hostile_size_is_a_config_error(pattern: str, reason: str) -> None:
    message = refused({"A->B.enabled": "true", "A->B.topics": pattern})
    assert reason in message
    assert len(message) < 500


def test_too_many_clusters() -> None:
    message = refused({"clusters": ",".join(f"C{i}" for i in range(101)), "bootstrap.servers": "x:1"})
    assert "at most 100 cluster aliases, not 101" in message


@pytest.mark.parametrize(
    ("entries", "names"),
    [
        (("orders", "pay[.]v1", "a\\.b", "x-y_z"), ("orders", "pay.v1", "a.b", "x-y_z")),
        ((), ()),
        (("orders.v1",), None),
        ((".*",), None),
        (("a|b",), None),
    ],
)
def test_literal_names(entries: tuple[str, ...], names: tuple[str, ...] | None) -> None:
    assert literal_names(entries) == names


def test_active_active_with_the_default_policy_is_not_a_loop() -> None:
    parse(A__B_enabled="true", B__A_enabled="true")


def test_identity_two_way_with_regex_topics_is_refused() -> None:
    message = refused({"A->B.enabled": "true", "B->A.enabled": "true", "replication.policy.class": IDENTITY})
    assert message.startswith("flows A->B->A form a cycle and A->B uses IdentityReplicationPolicy")
    assert "A->B.topics='.*'" in message


def test_identity_two_way_with_provenance_on_both_flows_is_accepted_and_on_one_is_refused() -> None:
    both = {"A->B.enabled": "true", "B->A.enabled": "true", "replication.policy.class": IDENTITY}
    config = parse_mm2_config({**BASE, **both, "strait.provenance.enabled": "true"}, env={})
    assert all(flow.settings.provenance_enabled for flow in config.enabled_flows)
    message = refused({**both, "A->B.strait.provenance.enabled": "true"})
    assert message.startswith("flows A->B->A form a cycle"), "B->A copies A's records back without the header"


def test_identity_two_way_with_disjoint_literal_topics_is_accepted() -> None:
    parse_mm2_config(
        {
            **BASE,
            "A->B.enabled": "true",
            "B->A.enabled": "true",
            "replication.policy.class": IDENTITY,
            "A->B.topics": "east-orders",
            "B->A.topics": "west-orders",
        },
        env={},
    )


def test_identity_two_way_with_a_shared_literal_topic_is_refused() -> None:
    message = refused(
        {
            "A->B.enabled": "true",
            "B->A.enabled": "true",
            "replication.policy.class": IDENTITY,
            "A->B.topics": "orders",
            "B->A.topics": "orders,payments",
        }
    )
    assert "topic 'orders' of A->B.topics='orders' comes back to A as 'orders'" in message


def test_identity_ring_whose_literal_topic_returns_prefixed_is_accepted() -> None:
    # orders -> B as orders (identity) -> C as B.orders -> A as C.B.orders, which A->B does not copy.
    parse_mm2_config(
        {
            **BASE,
            "A->B.enabled": "true",
            "B->C.enabled": "true",
            "C->A.enabled": "true",
            "A->B.replication.policy.class": IDENTITY,
            "A->B.topics": "orders",
        },
        env={},
    )


def test_mixed_policies_loop_with_a_growing_name_is_refused() -> None:
    # orders -> B as orders (identity) -> A as B.orders (default) -> B as B.orders (identity) -> ...
    message = refused(
        {
            "A->B.enabled": "true",
            "B->A.enabled": "true",
            "A->B.replication.policy.class": IDENTITY,
            "A->B.topics": "orders,B[.]orders",
        }
    )
    assert "topic 'orders'" in message
    assert "comes back to A as 'B.orders'" in message


def test_identity_ring_of_three_with_regex_topics_is_refused() -> None:
    message = refused(
        {"A->B.enabled": "true", "B->C.enabled": "true", "C->A.enabled": "true", "replication.policy.class": IDENTITY}
    )
    assert message.startswith("flows A->B->C->A form a cycle")


def test_disabled_reverse_flow_is_no_cycle() -> None:
    parse(A__B_enabled="true", B__A_enabled="false", replication_policy_class=IDENTITY)
