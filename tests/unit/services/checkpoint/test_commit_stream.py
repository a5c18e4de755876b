"""The commit stream's table: each group's latest committed offsets from `__consumer_offsets` records, as a broker
writes them (version-3 values), with deletions, filtered groups and records of other kinds."""

from __future__ import annotations

import struct

from services.checkpoint import commit_stream
from services.checkpoint.commit_stream import CommittedOffsetsTable, StreamedSourceGroups
from shared.config import parse_mm2_config
from shared.kafka.follow import FollowedRecord
from shared.kafka.group_offsets import CommittedOffset


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _commit_key(group: str, topic: str, partition: int) -> bytes:
    return struct.pack(">h", 1) + _string(group) + _string(topic) + struct.pack(">i", partition)


def _commit_value(offset: int, metadata: str = "", committed_ms: int = 1_000) -> bytes:
    return struct.pack(">hqi", 3, offset, -1) + _string(metadata) + struct.pack(">q", committed_ms)


def _metadata_key(group: str) -> bytes:
    return struct.pack(">h", 2) + _string(group)


class _Log:
    """`__consumer_offsets` records in log order."""

    def __init__(self) -> None:
        self.records: list[FollowedRecord] = []

    def add(self, key: bytes | None, value: bytes | None) -> _Log:
        self.records.append(FollowedRecord(len(self.records), key, value, 0, "__consumer_offsets"))
        return self

    def commit(self, group: str, topic: str, partition: int, offset: int, metadata: str = "") -> _Log:
        return self.add(_commit_key(group, topic, partition), _commit_value(offset, metadata))


def test_the_latest_commit_of_each_partition_wins_and_marks_its_group_changed() -> None:
    table = CommittedOffsetsTable(lambda _group: True)
    log = _Log().commit("g", "orders", 0, 5).commit("g", "orders", 1, 7, "m").commit("g", "orders", 0, 9)
    table.handle(log.records)
    assert table.offsets() == {"g": {("orders", 0): CommittedOffset(9), ("orders", 1): CommittedOffset(7, "m")}}
    assert table.drain_changed() == ["g"]
    assert table.drain_changed() == []
    assert table.commits == 3


def test_a_hundred_commits_of_one_group_are_one_change() -> None:
    table = CommittedOffsetsTable(lambda _group: True)
    log = _Log()
    for offset in range(100):
        log.commit("busy", "t", 0, offset)
    table.handle(log.records)
    assert table.drain_changed() == ["busy"]
    assert table.offsets(["busy"]) == {"busy": {("t", 0): CommittedOffset(99)}}


def test_an_offset_tombstone_forgets_the_partition_and_the_last_one_the_group() -> None:
    table = CommittedOffsetsTable(lambda _group: True)
    table.handle(_Log().commit("g", "t", 0, 1).commit("g", "t", 1, 2).records)
    table.drain_changed()
    table.handle(_Log().add(_commit_key("g", "t", 0), None).records)
    assert table.offsets() == {"g": {("t", 1): CommittedOffset(2)}}
    assert table.drain_changed() == ["g"]
    table.handle(_Log().add(_commit_key("g", "t", 1), None).records)
    assert table.offsets() == {}
    assert len(table) == 0


def test_a_deleted_group_is_forgotten() -> None:
    table = CommittedOffsetsTable(lambda _group: True)
    table.handle(_Log().commit("gone", "t", 0, 1).commit("kept", "t", 0, 2).records)
    table.handle(_Log().add(_metadata_key("gone"), None).records)  # the coordinator's tombstone for the group
    assert set(table.offsets()) == {"kept"}
    assert "gone" not in table.last_commit_ms
    assert table.drain_changed() == ["kept"]


def test_groups_the_filter_leaves_out_are_never_kept() -> None:
    table = CommittedOffsetsTable(lambda group: not group.startswith("internal-"))
    table.handle(_Log().commit("internal-x", "t", 0, 1).commit("app", "t", 0, 1).records)
    assert set(table.offsets()) == {"app"}


def test_group_metadata_and_unknown_record_types_are_counted_and_skipped() -> None:
    table = CommittedOffsetsTable(lambda _group: True)
    log = _Log().add(_metadata_key("g"), b"\x00\x03whatever").add(struct.pack(">h", 9) + b"future", b"x")
    table.handle(log.commit("g", "t", 0, 4).records)
    assert table.other_records == 2
    assert table.offsets() == {"g": {("t", 0): CommittedOffset(4)}}


def test_records_no_broker_writes_are_counted_and_the_rest_still_applies() -> None:
    table = CommittedOffsetsTable(lambda _group: True)
    log = _Log().add(None, b"x").add(_commit_key("g", "t", 0), struct.pack(">h", 99)).commit("g", "t", 0, 3)
    table.handle(log.records)
    assert table.invalid_records == 2
    assert table.offsets() == {"g": {("t", 0): CommittedOffset(3)}}


def test_groups_of_partitions_given_up_are_forgotten() -> None:
    table = CommittedOffsetsTable(lambda _group: True)
    table.handle(_Log().commit("a", "t", 0, 1).commit("b", "t", 0, 1).records)
    table.forget_where(lambda group: group == "a")
    assert set(table.offsets()) == {"b"}


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _streamed() -> tuple[StreamedSourceGroups, _Clock]:
    clock = _Clock()
    config = parse_mm2_config(
        {"clusters": "A,B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", "A->B.enabled": "true"},
        env={},
    )
    source = StreamedSourceGroups(
        config.flow("A", "B"), lambda _group: True, 10, lambda: frozenset({0}), 1, clock=clock
    )
    return source, clock


def test_a_group_translated_exactly_is_read_again_only_when_it_commits() -> None:
    source, clock = _streamed()
    source.table.handle(_Log().commit("g", "t", 0, 5).records)
    assert set(source.read_changed()) == {"g"}
    source.keep_settling([])  # the round translated it exactly
    assert not source.settling
    clock.now += 1
    assert source.read_changed() == {}
    source.table.handle(_Log().commit("g", "t", 0, 9).records)
    assert source.read_changed() == {"g": {("t", 0): CommittedOffset(9)}}


def test_a_group_not_translated_exactly_is_read_again_for_a_while() -> None:
    source, clock = _streamed()
    source.table.handle(_Log().commit("g", "t", 0, 5).records)
    source.read_changed()
    source.keep_settling(["g"])  # conservative: the offset syncs had not reached its position yet
    clock.now += commit_stream.SETTLE_S - 1
    assert set(source.read_changed()) == {"g"}  # no new commit, but the offset syncs may have caught up
    source.keep_settling([])  # now exact
    assert source.settling  # until the earlier round's settling time passes
    clock.now += 2
    assert source.read_changed() == {}
    assert not source.settling


def test_a_group_without_a_translation_is_looked_at_again_until_the_limit() -> None:
    source, clock = _streamed()
    source.table.handle(_Log().commit("g", "t", 0, 5).records)
    source.read_changed()
    source.keep_settling(["g"])  # no offset sync for its partition
    while clock.now < 1000.0 + commit_stream.MAX_SETTLE_S - commit_stream.SETTLE_S:
        clock.now += commit_stream.SETTLE_S - 1
        assert set(source.read_changed()) == {"g"}
        source.keep_settling(["g"])  # still no offset sync for its partition
    clock.now += commit_stream.SETTLE_S
    source.keep_settling(["g"])
    clock.now += commit_stream.SETTLE_S
    assert source.read_changed() == {}  # left to the full rounds


async def test_full_rounds_leave_out_groups_translated_for_good_until_they_commit() -> None:
    source, _clock = _streamed()
    source.table.handle(_Log().commit("exact", "t", 0, 5).commit("other", "u", 0, 1).commit("open", "t", 1, 3).records)
    first, _ = await source.read()
    assert set(first) == {"exact", "other", "open"}
    source.read_changed()
    source.translated_for_good({"exact": True, "other": False})  # "open" was translated conservatively
    again, _ = await source.read()
    assert set(again) == {"open"}
    assert source.relevant_translated_for_good() == ["exact"]
    source.table.handle(_Log().commit("exact", "t", 0, 9).records)
    assert set((await source.read())[0]) == {"exact", "open"}  # a commit not yet drained counts already


async def test_a_group_forgotten_is_no_longer_counted_as_translated_for_good() -> None:
    source, _clock = _streamed()
    source.table.handle(_Log().commit("g", "t", 0, 5).records)
    source.read_changed()
    source.translated_for_good({"g": True})
    source.table.forget("g")
    assert source.relevant_translated_for_good() == []
    source.table.handle(_Log().commit("g", "t", 0, 1).records)  # made again and committed: translated again
    assert set((await source.read())[0]) == {"g"}


async def test_after_offset_syncs_rewound_every_group_is_translated_again() -> None:
    source, _clock = _streamed()
    source.table.handle(_Log().commit("a", "t", 0, 5).commit("b", "t", 1, 5).records)
    source.read_changed()
    source.translated_for_good({"a": True, "b": True})
    assert (await source.read())[0] == {}
    source.translate_all_again()
    assert set((await source.read())[0]) == {"a", "b"}


def test_a_settling_group_translated_for_good_stops_settling_at_once() -> None:
    source, clock = _streamed()
    source.table.handle(_Log().commit("g", "t", 0, 5).commit("h", "t", 1, 5).records)
    source.read_changed()
    source.keep_settling(["g", "h"])  # no offset syncs yet for either
    clock.now += 1
    assert set(source.read_changed()) == {"g", "h"}
    source.translated_for_good({"g": True})  # the syncs arrived for g's partition
    clock.now += 1
    assert set(source.read_changed()) == {"h"}
