"""The consumer group's failover position as the offset translator answers it (GET /v1/flows/A/B/offsets)."""

from __future__ import annotations

import time
from collections.abc import Mapping

import httpx

from shared.partition_key import PartitionKey
from tests.soak.clusters import SOURCE, TARGET
from tests.soak.compare import ResumePoint


def translated_offsets(url: str, group: str) -> dict[PartitionKey, ResumePoint] | None:
    """The group's checkpoints keyed by source topic-partition; None while the translator cannot answer."""
    try:
        with httpx.Client(timeout=10) as client:
            answer = client.get(f"{url}/v1/flows/{SOURCE}/{TARGET}/offsets", params={"group": group})
    except httpx.TransportError:
        return None
    if answer.status_code != 200:
        return None
    prefix = f"{SOURCE}."
    return {
        (entry["topic"].removeprefix(prefix), int(entry["partition"])): ResumePoint(
            upstream=int(entry["upstream_offset"]), downstream=int(entry["offset"])
        )
        for entry in answer.json()["offsets"]
    }


def behind(points: Mapping[PartitionKey, ResumePoint], committed: Mapping[PartitionKey, int]) -> list[PartitionKey]:
    """Committed partitions whose checkpoint is missing or does not carry the committed offset yet."""
    return sorted(key for key, offset in committed.items() if key not in points or points[key].upstream != offset)


def wait_for_checkpoints(
    url: str, group: str, committed: Mapping[PartitionKey, int], timeout_s: float, settle_s: float = 10
) -> dict[PartitionKey, ResumePoint]:
    """Poll the translator until every committed partition's checkpoint carries the committed offset and the
    answer stayed the same for `settle_s` (offset syncs that arrive late still improve the translation), or time
    runs out; the last answer either way."""
    deadline = time.monotonic() + timeout_s
    points: dict[PartitionKey, ResumePoint] = {}
    while True:
        answer = translated_offsets(url, group)
        if answer is not None:
            settled = answer == points and not behind(answer, committed)
            points = answer
            if settled:
                return points
        if time.monotonic() > deadline:
            return points
        time.sleep(settle_s)
