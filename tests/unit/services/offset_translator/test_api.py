"""The HTTP API over an index fed with records: answers, 404/422/503 as problem JSON, the OpenAPI contract."""

from __future__ import annotations

import json

import httpx
import pytest

from services.offset_translator.models import GroupOffsets
from services.offset_translator.problems import PROBLEM_MEDIA_TYPE
from shared.control.codec import encode_event
from shared.control.events import ServiceStatus
from shared.kafka.follow import FollowedRecord
from shared.records import Checkpoint, Heartbeat, OffsetSync
from tests.unit.services.offset_translator.conftest import NOW_MS, Feed

OFFSETS = "/v1/flows/A/B/offsets"
TRANSLATE = "/v1/flows/A/B/translate"


def assert_problem(response: httpx.Response, status: int, detail: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body = response.json()
    assert body["status"] == status
    assert detail in body["detail"]


async def test_group_offsets_are_the_latest_checkpoints_with_their_age(client: httpx.AsyncClient, feed: Feed) -> None:
    feed.checkpoints([Checkpoint("orders-app", "A.orders", 1, 50, 40, "m1")], timestamp_ms=NOW_MS - 9000)
    feed.checkpoints([Checkpoint("orders-app", "A.orders", 0, 120, 110)], timestamp_ms=NOW_MS - 2000)
    feed.checkpoints([Checkpoint("orders-app", "A.orders", 1, 60, 52, "m2")], timestamp_ms=NOW_MS - 1000)
    feed.checkpoints([Checkpoint("other", "A.orders", 0, 1, 1)])
    feed.loaded()

    response = await client.get(OFFSETS, params={"group": "orders-app"})
    assert response.status_code == 200
    assert response.json() == {
        "group": "orders-app",
        "source": "A",
        "target": "B",
        "checkpoints_topic": "A.checkpoints.internal",
        "offsets": [
            {"topic": "A.orders", "partition": 0, "offset": 110, "upstream_offset": 120, "metadata": "",
             "checkpoint_age_ms": 2000},
            {"topic": "A.orders", "partition": 1, "offset": 52, "upstream_offset": 60, "metadata": "m2",
             "checkpoint_age_ms": 1000},
        ],
    }  # fmt: skip
    # The hot path builds this body without the model: it must still be exactly a GroupOffsets.
    assert GroupOffsets.model_validate(response.json()).model_dump() == response.json()
    groups = await client.get("/v1/flows/A/B/groups")
    assert groups.json()["groups"] == ["orders-app", "other"]


@pytest.mark.parametrize(
    ("url", "params", "detail"),
    [
        (OFFSETS, {"group": "nobody"}, "no checkpoint of group 'nobody' in A.checkpoints.internal on B"),
        ("/v1/flows/A/Z/offsets", {"group": "g"}, "unknown cluster 'Z' (clusters: A, B, C)"),
        ("/v1/flows/B/A/offsets", {"group": "g"}, "flow 'B->A' is not served by this translator (served: A->B)"),
        (TRANSLATE, {"topic": "unknown", "partition": 0, "offset": 5}, "no offset sync for unknown-0"),
        (TRANSLATE, {"topic": "orders", "partition": 3, "offset": 5}, "no offset sync for orders-3"),
        (TRANSLATE, {"topic": "orders", "partition": 0, "offset": 5}, "older than every stored offset sync"),
        ("/v1/flows/Q/B/status", {}, "unknown cluster 'Q'"),
        ("/v1/clusters/Q/topology", {}, "unknown cluster 'Q'"),
        ("/v1/nothing-here", {}, "Not Found"),
    ],
)
async def test_unknown_things_are_404_with_a_clear_message(
    client: httpx.AsyncClient, feed: Feed, url: str, params: dict[str, str | int], detail: str
) -> None:
    feed.syncs([OffsetSync("orders", 0, 100, 200)])
    feed.checkpoints([Checkpoint("g", "A.orders", 0, 100, 200)])
    feed.loaded()
    assert_problem(await client.get(url, params=params), 404, detail)


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"topic": "orders", "partition": "zero", "offset": 1}, "query.partition"),
        ({"topic": "orders", "partition": -1, "offset": 1}, "query.partition"),
        ({"topic": "orders", "partition": 0, "offset": 2**63}, "query.offset"),
        ({"topic": "orders", "partition": 0}, "query.offset"),
        ({"topic": "", "partition": 0, "offset": 1}, "query.topic"),
    ],
)
async def test_malformed_input_is_422_naming_the_field(
    client: httpx.AsyncClient, feed: Feed, params: dict[str, str | int], where: str
) -> None:
    feed.loaded()
    response = await client.get(TRANSLATE, params=params)
    assert_problem(response, 422, where)
    assert response.json()["errors"][0]["loc"] == where.split(".")


async def test_malformed_failover_body_is_422(client: httpx.AsyncClient, feed: Feed) -> None:
    feed.loaded()
    url = "/v1/flows/A/B/failover"
    assert_problem(
        await client.post(url, content=b"{not json", headers={"content-type": "application/json"}), 422, "body"
    )
    assert_problem(await client.post(url, json={"group": ""}), 422, "body.group")
    assert_problem(await client.post(url, json={"group": "g", "dry_run": "perhaps"}), 422, "body.dry_run")
    assert_problem(await client.post(url, json={"group": "g", "force": True}), 422, "body.force")


async def test_before_the_index_is_loaded_answers_are_503_and_not_ready(client: httpx.AsyncClient, feed: Feed) -> None:
    feed.checkpoints([Checkpoint("g", "A.orders", 0, 1, 1)])
    response = await client.get(OFFSETS, params={"group": "g"})
    assert_problem(response, 503, "still loading A.checkpoints.internal on B")
    assert response.headers["retry-after"] == "2"
    ready = await client.get("/ready")
    assert ready.status_code == 503
    assert ready.json()["loading"] == ["A.checkpoints.internal on B", "mm2-offset-syncs.B.internal on A"]

    feed.loaded()
    assert (await client.get(OFFSETS, params={"group": "g"})).status_code == 200
    assert (await client.get("/ready")).json() == {"status": "ok", "loading": [], "last_error": None}
    assert (await client.get("/health")).status_code == 200


async def test_translate_is_exact_within_a_run_and_mm2_compatible_beside_it(
    client: httpx.AsyncClient, feed: Feed
) -> None:
    # Syncs read before the topic's end replace each other in MM2's store: only the newest survives the load.
    # The run they form (10..100, gap-free) still answers exactly.
    feed.syncs([OffsetSync("orders", 0, 10, 110), OffsetSync("orders", 0, 100, 200)])
    feed.loaded()
    # Live: the run goes on to 150->250 (gap-free), then a jump to 170->300 (downstream grew by 50: a new run).
    feed.syncs([OffsetSync("orders", 0, 150, 250), OffsetSync("orders", 0, 170, 300)])

    async def translate(offset: int) -> tuple[int, int | None]:
        response = await client.get(TRANSLATE, params={"topic": "orders", "partition": 0, "offset": offset})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["remote_topic"] == "A.orders"
        return body["downstream_offset"], body["mm2_downstream_offset"]

    assert_problem(await client.get(TRANSLATE, params={"topic": "orders", "partition": 0, "offset": 9}), 404, "older")
    assert await translate(50) == (150, None)  # MM2 has no answer here after a restart; the run has
    assert await translate(100) == (200, 200)
    assert await translate(120) == (220, 201)  # exact between two syncs of one run; MM2 answers sync + 1
    assert await translate(150) == (250, 250)
    assert await translate(160) == (251, 251)  # between runs: MM2's answer, never ahead
    assert await translate(400) == (301, 301)  # past the newest sync


async def test_status_summarises_instances_and_the_mirrored_heartbeat(
    client: httpx.AsyncClient, app: object, feed: Feed
) -> None:
    statuses = [
        ServiceStatus(flow="A->B", service="data-mirror", instance="dm-1", state="running", ts=NOW_MS - 1000,
                      details={"records_behind": 40, "topics": 3, "stalled_partitions": ["orders-2"]}),
        ServiceStatus(flow="A->B", service="data-mirror", instance="dm-2", state="running", ts=NOW_MS - 2000,
                      details={"records_behind": 2, "topics": 3}),
        ServiceStatus(flow="A->B", service="checkpoint", instance="cp-1", state="degraded", ts=NOW_MS - 500,
                      last_error="translate: no sync for orders-1"),
        ServiceStatus(flow="B->A", service="checkpoint", instance="cp-9", state="failed", ts=NOW_MS),
        ServiceStatus(flow="A->B", service="acl-sync", instance="acl-1", state="stopped", ts=NOW_MS - 90_000),
    ]  # fmt: skip
    records = [FollowedRecord(i, s.instance.encode(), encode_event(s), 0) for i, s in enumerate(statuses)]
    app.state.index.on_status_records("B", records)  # type: ignore[attr-defined]
    feed.heartbeat(Heartbeat("A", "B", NOW_MS - 1500))

    response = await client.get("/v1/flows/A/B/status")
    assert response.status_code == 200
    status = response.json()
    assert status["state"] == "degraded"
    assert status["records_behind"] == 42
    assert status["topics"] == 3
    assert status["heartbeat_age_s"] == 1.5
    assert status["stalled_partitions"] == ["orders-2"]
    assert status["last_errors"] == ["checkpoint/cp-1: translate: no sync for orders-1"]
    assert [(i["service"], i["instance"], i["state"]) for i in status["instances"]] == [
        ("acl-sync", "acl-1", "stopped"),
        ("checkpoint", "cp-1", "degraded"),
        ("data-mirror", "dm-1", "running"),
        ("data-mirror", "dm-2", "running"),
    ]
    report = (await client.get("/v1/status")).json()
    assert [flow["flow"] for flow in report["flows"]] == ["A->B"]


async def test_flows_list_and_metrics(client: httpx.AsyncClient, feed: Feed) -> None:
    feed.checkpoints([Checkpoint("g1", "A.orders", 0, 1, 1), Checkpoint("g2", "A.orders", 0, 1, 1)])
    feed.loaded()
    flows = (await client.get("/v1/flows")).json()["flows"]
    assert flows == [
        {"flow": "A->B", "source": "A", "target": "B", "checkpoints_topic": "A.checkpoints.internal",
         "offset_syncs_topic": "mm2-offset-syncs.B.internal", "offset_syncs_cluster": "A", "checkpoints_loaded": True,
         "offset_syncs_loaded": True, "groups": 2, "checkpoints": 2},
    ]  # fmt: skip
    await client.get(OFFSETS, params={"group": "nobody"})
    metrics = (await client.get("/metrics")).text
    assert 'strait_translator_index_groups{flow="A->B"} 2.0' in metrics
    assert 'strait_translator_index_loaded{flow="A->B"} 1.0' in metrics
    assert 'strait_translator_requests_total{route="/v1/flows/{source}/{target}/offsets",status="404"} 1.0' in metrics
    assert 'strait_translator_records_read_total{kind="checkpoints"} 2.0' in metrics


async def test_openapi_documents_every_error_with_the_problem_schema(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert {"Problem", "InvalidInput", "GroupOffsets", "OffsetTranslation", "Topology", "FlowStatus"} <= set(
        schema["components"]["schemas"]
    )
    offsets = schema["paths"]["/v1/flows/{source}/{target}/offsets"]["get"]
    for status in ("404", "422", "503"):
        content = offsets["responses"][status]["content"]
        assert content == {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    assert all(path.startswith("/v1/") for path in schema["paths"] if path not in ("/health", "/ready", "/metrics"))


async def test_a_checkpoint_with_a_negative_partition_or_offset_is_not_served(
    client: httpx.AsyncClient, feed: Feed
) -> None:
    feed.checkpoints([Checkpoint("orders-app", "A.orders", 0, 120, 110), Checkpoint("orders-app", "A.orders", 1, 7, 6)])
    # Hostile or corrupt records read later: none replaces the good checkpoint of its partition or adds one.
    feed.checkpoints(
        [
            Checkpoint("orders-app", "A.orders", 0, 130, -1),
            Checkpoint("orders-app", "A.orders", 1, -5, 9),
            Checkpoint("orders-app", "A.orders", -1, 5, 5),
        ]
    )
    feed.loaded()

    response = await client.get(OFFSETS, params={"group": "orders-app"})
    assert response.status_code == 200, response.text
    assert [(o["partition"], o["upstream_offset"], o["offset"]) for o in response.json()["offsets"]] == [
        (0, 120, 110),
        (1, 7, 6),
    ]
    metrics = (await client.get("/metrics")).text
    assert 'strait_translator_records_skipped_total{kind="checkpoints"} 3.0' in metrics


def status_record(offset: int, instance: str, **fields: object) -> FollowedRecord:
    """A status record as any writer could put it on the topic, with fields no model checked."""
    body = {"type": "status", "version": 1, "flow": "A->B", "ts": NOW_MS - 1000, "service": "data-mirror"}
    return FollowedRecord(offset, instance.encode(), json.dumps({**body, "instance": instance, **fields}).encode(), 0)


async def test_a_malformed_status_record_is_skipped_and_every_other_instance_still_listed(
    client: httpx.AsyncClient, app: object
) -> None:
    index = app.state.index  # type: ignore[attr-defined]
    index.on_status_records(
        "B",
        [
            status_record(0, "dm-1", state="running", details={"records_behind": 3}),
            status_record(1, "dm-2", state="running", details={"stalled_partitions": 5}),
            status_record(2, "dm-1", state="running", details={"records_behind": "many", "dr": ["failed-over"]}),
            status_record(3, "cp-1", state="running", service="checkpoint", details=["not", "a", "dict"]),
            status_record(4, "ts-1", state="running", service="topic-sync", details={"topics": 4}),
        ],
    )

    for url in ("/v1/status", "/v1/flows/A/B/status"):
        response = await client.get(url)
        assert response.status_code == 200, response.text
    status = response.json()
    # dm-1 keeps its last good status; dm-2 and cp-1 never had one.
    assert [(i["instance"], i["records_behind"], i["topics"]) for i in status["instances"]] == [
        ("dm-1", 3, None),
        ("ts-1", None, 4),
    ]
    assert status["records_behind"] == 3
    metrics = (await client.get("/metrics")).text
    assert 'strait_translator_records_skipped_total{kind="status"} 3.0' in metrics


async def test_a_heartbeat_or_status_stamped_far_ahead_does_not_hide_a_stall(
    client: httpx.AsyncClient, app: object, feed: Feed
) -> None:
    hour_ahead = NOW_MS + 3_600_000  # a hostile record, or an emitter whose clock jumped
    feed.heartbeat(Heartbeat("A", "B", NOW_MS - 60_000))
    feed.heartbeat(Heartbeat("A", "B", hour_ahead))
    statuses = [
        ServiceStatus(flow="A->B", service="data-mirror", instance="dm-1", state="running", ts=hour_ahead),
        ServiceStatus(flow="A->B", service="checkpoint", instance="cp-1", state="running", ts=NOW_MS - 1000),
    ]
    records = [FollowedRecord(i, s.instance.encode(), encode_event(s), 0) for i, s in enumerate(statuses)]
    app.state.index.on_status_records("B", records)  # type: ignore[attr-defined]

    status = (await client.get("/v1/flows/A/B/status")).json()
    assert status["heartbeat_age_s"] == 60.0  # the last heartbeat that can be believed
    assert status["state"] == "degraded"  # data-mirror has no believable status: it may have stopped
    assert [(i["instance"], i["stale"], i["clock_ahead_s"]) for i in status["instances"]] == [
        ("cp-1", False, None),
        ("dm-1", True, 3600.0),
    ]
    metrics = (await client.get("/metrics")).text
    assert 'strait_translator_records_ahead_of_clock_total{kind="heartbeats"} 1.0' in metrics
    assert 'strait_translator_records_ahead_of_clock_total{kind="status"} 1.0' in metrics

    feed.heartbeat(Heartbeat("A", "B", NOW_MS + 2000))  # a clock a little ahead is believed
    assert (await client.get("/v1/flows/A/B/status")).json()["heartbeat_age_s"] == 0.0
