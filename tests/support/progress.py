"""What data-mirror has reported copied (its progress topic on the target), for tests that must start another
service only once the mirror's position is known."""

from __future__ import annotations

from collections.abc import Mapping

from shared.control.topic_names import progress_topic
from shared.progress_store import load_progress
from tests.support.waiting import wait_until


def copied_to(target: Mapping[str, str], source_alias: str, flow: str, topic: str, partition: int) -> int:
    """The next source offset the mirror has committed as copied for one partition (0 before any report)."""
    progress = load_progress(target, progress_topic(source_alias), flow).get((topic, partition))
    return progress.next_offset if progress is not None else 0


def wait_for_progress(
    target: Mapping[str, str], source_alias: str, flow: str, topic: str, partition: int, offset: int
) -> None:
    """Wait until the mirror's committed progress for the partition is exactly `offset`."""
    wait_until(
        lambda: copied_to(target, source_alias, flow, topic, partition) == offset,
        120,
        f"the mirror's progress for {topic}-{partition} at {offset}",
    )
