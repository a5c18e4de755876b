"""The failover plan: set translated offsets, leave equal ones, never rewind a group further ahead unless asked."""

from __future__ import annotations

from services.offset_translator.failover import plan
from services.offset_translator.models import GroupOffsets, PartitionOffset


def offsets(*rows: tuple[int, int]) -> GroupOffsets:
    return GroupOffsets(
        group="g",
        source="A",
        target="B",
        checkpoints_topic="A.checkpoints.internal",
        offsets=[
            PartitionOffset(topic="A.t", partition=p, offset=o, upstream_offset=o, metadata="", checkpoint_age_ms=0)
            for p, o in rows
        ],
    )


def test_plan_per_partition() -> None:
    translated = offsets((0, 10), (1, 20), (2, 30), (3, 40))
    current = {("A.t", 1): 20, ("A.t", 2): 35, ("A.t", 3): 5, ("A.other", 0): 99}
    actions = [(p.partition, p.action, p.previous_offset) for p in plan(translated, current, allow_rewind=False)]
    assert actions == [(0, "set", None), (1, "unchanged", 20), (2, "kept-ahead", 35), (3, "set", 5)]
    rewound = [p.action for p in plan(translated, current, allow_rewind=True)]
    assert rewound == ["set", "unchanged", "set", "set"]
