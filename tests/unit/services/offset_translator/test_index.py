"""The index answers from records alone: latest checkpoint in log order, syncs through OffsetSyncStore, statuses."""

from __future__ import annotations

import pytest

from services.offset_translator.errors import NotReadyError, UnknownClusterError, UnknownFlowError
from services.offset_translator.flows import ServedFlow
from services.offset_translator.index import TranslatorIndex
from services.offset_translator.service import build_index
from shared.control import ServiceStatus
from shared.control.codec import encode_event
from shared.errors import ConfigError
from shared.flow_selection import selected_flows
from shared.kafka.follow import FollowedRecord
from shared.records import Checkpoint, Heartbeat, OffsetSync
from tests.unit.services.offset_translator.conftest import AB, Feed, make_config


@pytest.fixture
def index() -> TranslatorIndex:
    config = make_config()
    return build_index(config, selected_flows(config))


def test_latest_checkpoint_in_log_order_wins_even_when_lower(index: TranslatorIndex) -> None:
    feed = Feed(index)
    feed.checkpoints([Checkpoint("g", "A.orders", 0, 100, 90)], timestamp_ms=1)
    feed.checkpoints([Checkpoint("g", "A.orders", 0, 10, 5, "rewound")], timestamp_ms=2)
    feed.checkpoints([Checkpoint("g", "A.orders", 1, 7, 7)], timestamp_ms=3)

    group = index.checkpoints.group(AB, "g")
    assert group is not None
    assert group[("A.orders", 0)].checkpoint == Checkpoint("g", "A.orders", 0, 10, 5, "rewound")
    assert group[("A.orders", 0)].timestamp_ms == 2
    assert set(group) == {("A.orders", 0), ("A.orders", 1)}
    assert index.checkpoints.group_count(AB) == 1
    assert index.checkpoints.checkpoint_count(AB) == 2


def test_records_that_do_not_decode_are_skipped_and_counted(index: TranslatorIndex) -> None:
    feed = Feed(index)
    good = Checkpoint("g", "A.orders", 0, 1, 1)
    feed.raw("checkpoints", good.record_key(), b"\x00\x01garbage")  # version 1: refused
    feed.raw("checkpoints", good.record_key(), None)  # a tombstone
    feed.raw("syncs", b"\x00", b"short")
    feed.checkpoints([good])

    assert index.records_skipped["checkpoints"] == 2
    assert index.records_skipped["offset-syncs"] == 1
    group = index.checkpoints.group(AB, "g")
    assert group is not None
    assert group[("A.orders", 0)].checkpoint == good


def test_flow_lookup_names_the_unknown_part(index: TranslatorIndex) -> None:
    with pytest.raises(UnknownClusterError, match="unknown cluster 'Z'"):
        index.flow("Z", "B")
    with pytest.raises(UnknownFlowError, match=r"'B->A' is not served .*served: A->B"):
        index.flow("B", "A")
    assert index.flow("A", "B").checkpoints_topic == "A.checkpoints.internal"


def test_nothing_is_answered_before_both_topics_were_read_to_end(index: TranslatorIndex) -> None:
    flow = index.flow("A", "B")
    assert not index.loaded
    assert index.loading() == ["A.checkpoints.internal on B", "mm2-offset-syncs.B.internal on A"]
    with pytest.raises(NotReadyError):
        index.require_checkpoints(flow)
    index.mark_checkpoints_loaded(AB)
    index.require_checkpoints(flow)
    with pytest.raises(NotReadyError, match=r"mm2-offset-syncs\.B\.internal on A"):
        index.require_syncs(flow)
    index.mark_syncs_loaded(AB)
    assert index.loaded
    assert index.loading() == []


def test_sync_store_per_flow_translates_after_load(index: TranslatorIndex) -> None:
    feed = Feed(index)
    feed.syncs([OffsetSync("orders", 0, 100, 200)])
    assert index.syncs[AB].translate_downstream("orders", 0, 150) is None  # not read to end yet
    feed.loaded()
    assert index.syncs[AB].translate_downstream("orders", 0, 150) == 201


def test_status_records_keep_the_latest_per_instance_and_tombstones_forget(index: TranslatorIndex) -> None:
    first = ServiceStatus(flow="A->B", service="checkpoint", instance="c-1", state="starting", ts=1)
    second = first.model_copy(update={"state": "running", "ts": 2})
    other = ServiceStatus(flow="A->B", service="data-mirror", instance="d-1", state="running", ts=3)
    records = [FollowedRecord(i, s.instance.encode(), encode_event(s), 0) for i, s in enumerate((first, second, other))]
    index.on_status_records("B", records)
    assert sorted((s.instance, s.state) for s in index.statuses.statuses("B")) == [
        ("c-1", "running"),
        ("d-1", "running"),
    ]

    index.on_status_records("B", [FollowedRecord(9, b"d-1", None, 0), FollowedRecord(10, None, b"not json", 0)])
    assert [s.instance for s in index.statuses.statuses("B")] == ["c-1"]


def test_newest_heartbeat_is_kept(index: TranslatorIndex) -> None:
    feed = Feed(index)
    feed.heartbeat(Heartbeat("A", "B", 500))
    feed.heartbeat(Heartbeat("A", "B", 300))  # an older one read later does not move the age back
    assert index.statuses.heartbeat_ms(AB) == 500


def test_served_flow_names_follow_policy_and_sync_location() -> None:
    config = make_config(
        "clusters=A,B\nA.bootstrap.servers=h:1\nB.bootstrap.servers=h:2\nA->B.enabled=true\n"
        "A->B.offset-syncs.topic.location=target\nreplication.policy.separator=_\n"
    )
    flow = ServedFlow.of(config.flow("A", "B"))
    assert flow.checkpoints_topic == "A_checkpoints_internal"
    assert flow.offset_syncs_topic == "mm2-offset-syncs_A_internal"
    assert flow.offset_syncs_cluster == "B"
    assert flow.heartbeats_topic == "A_heartbeats"


def test_flow_selection() -> None:
    config = make_config()
    assert [f.name for f in selected_flows(config)] == ["A->B"]
    assert [f.name for f in selected_flows(config, "B->A, A->C", require_enabled=False)] == ["B->A", "A->C"]
    with pytest.raises(ConfigError, match="unknown cluster alias 'Z'"):
        selected_flows(config, "A->Z")
    with pytest.raises(ConfigError, match="no enabled flow"):
        selected_flows(make_config("clusters=A,B\nA.bootstrap.servers=h:1\nB.bootstrap.servers=h:2\n"))


def test_group_partitions_come_in_order_also_after_new_ones_arrive(index: TranslatorIndex) -> None:
    feed = Feed(index)
    feed.checkpoints([Checkpoint("g", "A.t", 2, 1, 1), Checkpoint("g", "A.s", 0, 1, 1)])
    order = index.checkpoints.sorted_group(AB, "g")
    assert order is not None
    assert [key for key, _ in order] == [("A.s", 0), ("A.t", 2)]
    feed.checkpoints([Checkpoint("g", "A.t", 1, 5, 4), Checkpoint("g", "A.s", 0, 9, 9)])
    order = index.checkpoints.sorted_group(AB, "g")
    assert order is not None
    assert [(key, entry.checkpoint.downstream_offset) for key, entry in order] == [
        (("A.s", 0), 9),
        (("A.t", 1), 4),
        (("A.t", 2), 1),
    ]
    assert index.checkpoints.sorted_group(AB, "nobody") is None
