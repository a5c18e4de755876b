"""The cached offsets body: the same document as the model path, fresh after every new checkpoint, bounded."""

from __future__ import annotations

import json

import httpx
from fastapi import FastAPI

from services.offset_translator import queries
from services.offset_translator.offsets_json import GroupOffsetsJson
from shared.records import Checkpoint
from tests.unit.services.offset_translator.conftest import AB, NOW_MS, Feed

OFFSETS = "/v1/flows/A/B/offsets"


def test_body_equals_the_document_including_escaped_metadata_and_ages(app: FastAPI, feed: Feed) -> None:
    feed.checkpoints([Checkpoint("g", "A.orders", 1, 9, 8, 'say "hi"\\ \u00e9\n')], timestamp_ms=NOW_MS - 5)
    feed.checkpoints([Checkpoint("g", "A.orders", 0, 3, 2)], timestamp_ms=NOW_MS + 50)  # a clock behind: age 0
    feed.loaded()
    index = app.state.index
    body = queries.group_offsets_json(index, GroupOffsetsJson(index.checkpoints), "A", "B", "g", NOW_MS)
    assert json.loads(body) == queries.group_offsets_document(index, "A", "B", "g", NOW_MS)
    assert [entry["checkpoint_age_ms"] for entry in json.loads(body)["offsets"]] == [0, 5]


async def test_a_new_checkpoint_changes_the_next_answer(client: httpx.AsyncClient, feed: Feed) -> None:
    feed.checkpoints([Checkpoint("g", "A.orders", 0, 10, 10)])
    feed.loaded()
    first = await client.get(OFFSETS, params={"group": "g"})
    assert [e["offset"] for e in first.json()["offsets"]] == [10]

    feed.checkpoints([Checkpoint("g", "A.orders", 0, 20, 19), Checkpoint("g", "A.payments", 0, 5, 5)])
    second = await client.get(OFFSETS, params={"group": "g"})
    assert [(e["topic"], e["offset"]) for e in second.json()["offsets"]] == [("A.orders", 19), ("A.payments", 5)]


def test_least_recently_asked_groups_are_dropped_beyond_the_bound(app: FastAPI, feed: Feed) -> None:
    feed.checkpoints([Checkpoint(f"g{n}", "A.orders", p, 1, 1) for n in range(3) for p in range(4)])
    feed.loaded()
    index = app.state.index
    flow = index.flow(*AB)
    rendered = GroupOffsetsJson(index.checkpoints, max_partitions=8)
    for group in ("g0", "g1", "g0", "g2"):  # g1 is now the least recently asked
        assert rendered.render(flow, group, NOW_MS) is not None
    cached = {group for (_, group) in rendered._cache}
    assert cached == {"g0", "g2"}
    assert rendered.render(flow, "nobody", NOW_MS) is None
