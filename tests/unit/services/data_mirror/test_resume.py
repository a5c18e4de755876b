"""Where a partition's copy goes on (services/data_mirror/resume.py), the one rule the task loop and both copiers
ask: at a task's start, after OFFSET_OUT_OF_RANGE, after a truncation."""

from __future__ import annotations

import pytest

from services.data_mirror.resume import Resume, Where, committed_start, diverged_at, made_again, out_of_range


@pytest.mark.parametrize(
    ("position", "to_latest", "expected"),
    [
        (50, False, Where(50, Resume.AT_POSITION)),  # a leader caught up: the position is there again
        (5, False, Where(10, Resume.EXPIRED)),  # retention passed it: forwards, the records between expired
        (5, True, Where(100, Resume.EXPIRED)),
        (150, False, Where(10, Resume.BACKWARDS)),  # the log now ends before it: made again or truncated
        (150, True, Where(100, Resume.BACKWARDS)),
    ],
)
def test_a_position_the_source_no_longer_holds(position: int, to_latest: bool, expected: Where) -> None:
    assert out_of_range(position, 10, 100, to_latest=to_latest) == expected


def test_where_a_leader_says_the_log_diverged_wins() -> None:
    assert out_of_range(150, 10, 100, to_latest=True, diverged=80) == Where(80, Resume.BACKWARDS)
    assert diverged_at(80, 150) == 80
    assert diverged_at(150, 150) is None  # the epoch ends at the position: nothing below it changed
    assert diverged_at(-1, 150) is None  # the leader does not know the epoch: auto.offset.reset decides


@pytest.mark.parametrize(
    ("committed", "kwargs", "expected"),
    [
        (None, {"to_latest": False}, Where(10, Resume.RESET)),
        (None, {"to_latest": True}, Where(100, Resume.RESET)),
        (50, {"to_latest": True}, Where(50, Resume.AT_POSITION)),
        (50, {"to_latest": True, "made_again": True}, Where(10, Resume.BACKWARDS)),
        (5, {"to_latest": True}, Where(10, Resume.EXPIRED)),  # copies what is left, as MM2 does
        (150, {"to_latest": True}, Where(100, Resume.BACKWARDS)),
        (150, {"to_latest": False, "epoch_known": True}, Where(150, Resume.AT_POSITION)),  # the epoch is asked
    ],
)
def test_where_a_task_starts_a_partition(committed: int | None, kwargs: dict[str, bool], expected: Where) -> None:
    options = {"made_again": False, "epoch_known": False, **kwargs}
    assert committed_start(committed, 10, 100, **options) == expected


def test_a_topic_is_made_again_when_a_known_id_changed() -> None:
    assert made_again("a", "b")
    assert not made_again("a", "a")
    assert not made_again(None, "b")  # never known: nothing to compare
