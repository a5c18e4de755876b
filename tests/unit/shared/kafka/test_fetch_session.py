"""Incremental fetch sessions: a request names only what changed; a lost session starts again in full."""

from __future__ import annotations

from aiokafka.protocol.fetch import FetchRequest_v11

from shared.kafka.error_codes import FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
from shared.kafka.fetch_session import MAX_EPOCH, FetchSession
from shared.kafka.leader_epochs import EpochFetchRequest

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)
MIB = 1_048_576


def wanted(**offsets: int) -> dict[tuple[str, int], tuple[int, int, int]]:
    """`a0=5` -> {("a", 0): (5, epoch 3, 1 MiB)}."""
    return {(name[0], int(name[1:])): (offset, 3, MIB) for name, offset in offsets.items()}


def test_the_first_request_opens_a_session_naming_every_partition() -> None:
    session = FetchSession()
    ask = session.request(wanted(a0=5, a1=7, b0=0))
    assert ask.full
    assert (ask.session_id, ask.epoch) == (0, 0)
    assert ask.partitions == wanted(a0=5, a1=7, b0=0)
    assert ask.forgotten == []


def test_then_only_moved_added_and_dropped_partitions_are_named() -> None:
    session = FetchSession()
    session.request(wanted(a0=5, a1=7, b0=0))
    assert session.answered(0, 42)
    quiet = session.request(wanted(a0=5, a1=7, b0=0))
    assert (quiet.session_id, quiet.epoch, quiet.partitions, quiet.forgotten) == (42, 1, {}, [])
    assert session.answered(0, 42)
    moved = session.request(wanted(a0=9, a1=7))  # a0 moved on, b0 is paused (not fetched now)
    assert (moved.epoch, moved.partitions, moved.forgotten) == (2, wanted(a0=9), [B0])
    assert session.answered(0, 42)
    back = session.request(wanted(a0=9, b0=0))
    assert (back.epoch, back.partitions, sorted(back.forgotten)) == (3, wanted(b0=0), [A1])


def test_a_changed_leader_epoch_names_the_partition_again() -> None:
    session = FetchSession()
    session.request(wanted(a0=5))
    session.answered(0, 42)
    ask = session.request({A0: (5, 4, MIB)})
    assert ask.partitions == {A0: (5, 4, MIB)}


def test_a_lost_session_answers_nothing_and_the_next_request_is_full() -> None:
    for error in (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH):
        session = FetchSession()
        session.request(wanted(a0=5, a1=7))
        session.answered(0, 42)
        session.request(wanted(a0=6, a1=7))
        assert not session.answered(error, 0)
        again = session.request(wanted(a0=6, a1=7))
        assert again.full
        assert again.partitions == wanted(a0=6, a1=7)


def test_a_request_without_an_answer_starts_a_new_session() -> None:
    session = FetchSession()
    session.request(wanted(a0=5))
    session.answered(0, 42)
    session.request(wanted(a0=6))
    session.reset()  # the connection broke: whether the broker saw it is unknown
    again = session.request(wanted(a0=6))
    assert again.full
    assert again.partitions == wanted(a0=6)


def test_a_broker_without_room_for_sessions_gets_full_requests() -> None:
    session = FetchSession()
    session.request(wanted(a0=5))
    assert session.answered(0, 0)  # no session given (its cache is full)
    again = session.request(wanted(a0=5))
    assert again.full
    assert (again.session_id, again.epoch) == (0, 0)
    assert again.partitions == wanted(a0=5)


def test_the_epoch_wraps_to_one_not_zero() -> None:
    session = FetchSession()
    session.request(wanted(a0=5))
    session.answered(0, 42)
    session.epoch = MAX_EPOCH
    session.request(wanted(a0=5))
    session.answered(0, 42)
    assert session.request(wanted(a0=5)).epoch == 1


def test_the_wire_request_carries_session_and_forgotten_partitions() -> None:
    request = EpochFetchRequest(100, MIB, 1, wanted(a0=9), session=(42, 2), forgotten=[B0, A1])
    built = request.build(FetchRequest_v11)
    assert (built.session_id, built.session_epoch) == (42, 2)
    assert built.topics == [("a", [(0, 3, 9, -1, MIB)])]
    assert sorted(built.forgotten_topics_data) == [("a", [1]), ("b", [0])]
    assert built.encode()  # encodes as Kafka's Fetch v11
