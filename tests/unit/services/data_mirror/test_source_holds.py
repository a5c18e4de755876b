"""Partitions the source cannot be read for now (no leader, topic not found): held and reported as blocked on the
source, looked at again, and copied once the source answers, while the slot's other partitions copy."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from services.data_mirror import task_loop as task_loop_module
from services.data_mirror.task_clients import offset_bounds
from services.data_mirror.task_entry import task_loop
from shared.records.progress import CopyReport, ProgressKey, decode_progress_record
from tests.unit.services.data_mirror.fake_kafka import (
    FakeCluster,
    FakeMessage,
    FakeProducer,
    Record,
    fake_clients,
    read_progress,
)
from tests.unit.services.data_mirror.test_copy_task import FLOW, PROGRESS, _fill, _spec, _until, _values

KEY0, KEY1 = ("orders", 0), ("orders", 1)


@pytest.fixture(autouse=True)
def _look_again_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(task_loop_module, "SOURCE_LOOK_AGAIN_S", 0.0, raising=False)


def _blocked_on_source(cluster: FakeCluster, key: tuple[str, int]) -> list[CopyReport]:
    return [r for r in _reports_of(cluster, key) if r.blocked_on == "source"]


def _reports_of(cluster: FakeCluster, key: tuple[str, int]) -> list[CopyReport]:
    found = []
    for record in cluster.committed(PROGRESS, 0):
        assert record.key is not None
        assert record.value is not None
        parsed = ProgressKey.decode(record.key)
        if (parsed.topic, parsed.partition) == key:
            report = decode_progress_record(record.value).report
            if report is not None:
                found.append(report)
    return found


def test_a_leaderless_partition_at_start_is_held_and_reported_while_the_others_copy_then_copied() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 50)
    _fill(cluster, 1, 30)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    answers = {"left_out": 3}

    def bounds(keys: list[tuple[str, int]]) -> tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]:
        leaderless = answers["left_out"] > 0 and KEY1 in keys
        if leaderless:
            answers["left_out"] -= 1
        shown = [key for key in keys if not (leaderless and key == KEY1)]
        return {key: 0 for key in shown}, {key: len(cluster.log(*key)) for key in shown}

    clients.offset_bounds = bounds
    clients.handover_requested = _until(lambda: len(cluster.log("A.orders", 1)) == 30)
    assert task_loop(_spec(2), clients).run().error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)]
    assert _values(cluster, 1) == [r.value for r in cluster.log("orders", 1)], "copied once the leader is back"
    held = _blocked_on_source(cluster, KEY1)
    assert held, "reported as blocked on the source while held"
    assert held[0].blocked_offset == 0
    assert _reports_of(cluster, KEY1)[-1].blocked_offset is None, "no longer blocked once copied"


def test_a_committed_position_no_leader_answers_the_epoch_of_holds_only_its_partition() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 100)
    _fill(cluster, 1, 10)
    first = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    first.consumer.leader_epoch = 3
    first.handover_requested = _until(lambda: len(cluster.log("A.orders", 0)) == 100)
    assert task_loop(_spec(2), first).run().error is None
    _fill(cluster, 0, 5, start=100)
    _fill(cluster, 1, 20, start=10)
    again = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)

    def epoch_ends(epochs: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        if KEY0 in epochs and len(cluster.log("A.orders", 1)) < 30:  # p0's leader answers once p1 is copied
            return {key: -1 for key in epochs if key != KEY0}  # p0's leader answered with an error
        return {key: -1 for key in epochs}

    again.epoch_ends = epoch_ends

    def handover() -> bool:
        return len(cluster.log("A.orders", 0)) == 105 and len(cluster.log("A.orders", 1)) == 30

    again.handover_requested = _until(handover)
    assert task_loop(_spec(2, generation=2), again).run().error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)], "nothing copied twice"
    assert _values(cluster, 1) == [r.value for r in cluster.log("orders", 1)]
    held = _blocked_on_source(cluster, KEY0)
    assert held
    assert held[0].blocked_offset == 100
    assert "leader epoch" in (held[0].blocked_reason or "")


class _Future:
    def __init__(self, offset: int | None, error: KafkaError | None = None) -> None:
        self.offset, self.error = offset, error

    def result(self, timeout: float = 0) -> Any:
        if self.error is not None:
            raise KafkaException(self.error)
        return self


class _Admin:
    def __init__(self) -> None:
        self.refreshed: list[str] = []

    def list_topics(self, topic: str, timeout: float = 0) -> None:
        self.refreshed.append(topic)

    def list_offsets(self, specs: dict[Any, Any], request_timeout: float = 0) -> dict[Any, _Future]:
        return {
            tp: _Future(None, KafkaError(KafkaError.LEADER_NOT_AVAILABLE)) if tp.partition == 1 else _Future(7)
            for tp in specs
        }


def test_offset_bounds_leave_out_a_partition_without_a_leader_instead_of_failing_all() -> None:
    admin = _Admin()
    earliest, latest = offset_bounds(admin, [KEY0, KEY1])  # type: ignore[arg-type]
    assert earliest == {KEY0: 7}
    assert latest == {KEY0: 7}
    assert admin.refreshed == ["orders"], "a partition left out: its leader is looked up again for the next look"


class _StaleAdmin:
    """librdkafka's admin client as it behaves after a partition's only broker came back: it takes leaders from
    cached metadata and answers "No leaders found" for the whole look-up until that metadata is read again."""

    def __init__(self) -> None:
        self.refreshed: list[str] = []

    def list_offsets(self, specs: dict[Any, Any], request_timeout: float = 0) -> dict[Any, _Future]:
        if not self.refreshed:
            raise KafkaException(KafkaError(KafkaError._NOENT, "Failed to query partition leaders: No leaders found"))
        return {tp: _Future(7) for tp in specs}

    def list_topics(self, topic: str, timeout: float = 0) -> None:
        self.refreshed.append(topic)


def test_a_look_up_that_knew_no_leader_reads_the_metadata_again_so_the_next_look_finds_the_partition() -> None:
    admin = _StaleAdmin()
    with pytest.raises(KafkaException):
        offset_bounds(admin, [KEY0, KEY1])  # type: ignore[arg-type]
    assert admin.refreshed == ["orders"]
    assert offset_bounds(admin, [KEY0, KEY1]) == ({KEY0: 7, KEY1: 7}, {KEY0: 7, KEY1: 7})  # type: ignore[arg-type]


def test_a_partition_held_as_topic_gone_is_released_when_the_topic_is_there_and_reported_while_held() -> None:
    cluster = FakeCluster()
    _fill(cluster, 0, 40)
    _fill(cluster, 1, 40)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    gone = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "unknown topic", fatal=False)
    clients.consumer.errors.append(FakeMessage("orders", 1, 0, Record(None, None, 0, None), error=gone))
    clients.handover_requested = _until(lambda: len(cluster.log("A.orders", 1)) == 40)
    assert task_loop(_spec(2), clients).run().error is None
    assert _values(cluster, 0) == [r.value for r in cluster.log("orders", 0)]
    assert _values(cluster, 1) == [r.value for r in cluster.log("orders", 1)], "released: the topic is there"
    held = _blocked_on_source(cluster, KEY1)
    assert held, "reported as blocked on the source while held"
    assert "topic" in (held[0].blocked_reason or "")
    assert _reports_of(cluster, KEY1)[-1].blocked_offset is None


def test_a_partition_held_while_its_log_was_truncated_is_copied_again_from_where_the_log_diverged() -> None:
    """The source lost the partition's leader mid-copy (held as not found), and an unclean election truncated its
    log below what was copied; new records were written there. Once the source answers, the leader epoch of what
    was read decides where reading goes on: released at the old position, the new records below it were skipped."""
    cluster = FakeCluster()
    _fill(cluster, 0, 10)
    _fill(cluster, 1, 30)
    clients = fake_clients(cluster, FakeProducer(cluster), progress_topic=PROGRESS, flow=FLOW, handover=lambda: False)
    consumer = clients.consumer
    consumer.leader_epoch = 3
    elected = {"done": False}
    asked: list[dict[tuple[str, int], int]] = []

    def epoch_ends(epochs: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        asked.append(dict(epochs))
        if elected["done"]:
            consumer.leader_epoch = 4  # what is read from now on is the new leader's
        return {key: 20 if (key, epoch) == (KEY1, 3) else -1 for key, epoch in epochs.items()}

    def unclean_election_then_handover() -> bool:
        if not elected["done"] and len(cluster.log("A.orders", 1)) == 30:
            elected["done"] = True
            log = cluster.log("orders", 1)
            del log[20:]  # what the new leader holds of epoch 3
            log.extend(Record(b"new", f"1:new-{i}".encode(), 5_000 + i) for i in range(20, 35))
            gone = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "unknown topic", fatal=False)
            consumer.errors.append(FakeMessage("orders", 1, 30, Record(None, None, 0, None), error=gone))
        return elected["done"] and len(cluster.log("A.orders", 1)) >= 45

    clients.epoch_ends = epoch_ends
    clients.handover_requested = _until(unclean_election_then_handover)
    assert task_loop(_spec(2), clients).run().error is None
    copied = _values(cluster, 1)
    assert copied[:30] == [f"1:{i}".encode().ljust(10, b".") for i in range(30)], "what was copied stays"
    assert copied[30:] == [f"1:new-{i}".encode() for i in range(20, 35)], "each new record once, from offset 20"
    assert {KEY1: 3} in asked, "the leader was asked where the epoch of what was read ends"
    assert _reports_of(cluster, KEY1)[-1].blocked_offset is None
    final = read_progress(cluster, PROGRESS, FLOW)[KEY1]
    assert final.next_offset == 35
