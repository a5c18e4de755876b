"""The cockpit's JSON and files: a flow in trouble stands out with why, partitions and groups come in pages cut on
the server, the history ring keeps an hour, a lost target makes the overview stale, and /ui/ is served from the
package with a CSP that allows no inline script and no other origin."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from services.offset_translator.history import HistoryRing
from services.offset_translator.overview import overview
from shared.control.codec import encode_event
from shared.control.events import ServiceStatus
from shared.kafka.follow import FollowedRecord
from shared.records import Checkpoint
from shared.records.progress import CopyReport, ProgressKey, encode_progress
from tests.unit.services.offset_translator.conftest import AB, NOW_MS, Feed, build_app

TOKEN = "cockpit-token-0123456789"


async def _get(app: FastAPI, url: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.get(url, headers=headers)


def _status(app: FastAPI, service: str, *, age_s: float = 1, state: str = "running", **details: Any) -> None:
    status = ServiceStatus(
        flow="A->B",
        service=service,
        instance=f"{service}-1",
        state=state,  # type: ignore[arg-type]
        ts=NOW_MS - int(age_s * 1000),
        details=details,
    )
    app.state.index.on_status_records("B", [FollowedRecord(1, status.instance.encode(), encode_event(status), NOW_MS)])


def _progress(app: FastAPI, topic: str, partition: int, next_offset: int, end: int) -> None:
    value = encode_progress(next_offset, report=CopyReport(end_offset=end, behind_since_ms=NOW_MS - 2_000))
    key = ProgressKey("A->B", topic, partition).encode()
    app.state.index.on_progress_records(AB, [FollowedRecord(1, key, value, NOW_MS)])


async def test_a_flow_whose_data_mirror_stopped_reporting_is_down_and_says_why() -> None:
    app = build_app()
    _status(app, "data-mirror", age_s=45, records_mirrored=10)
    _status(app, "topic-sync")
    _status(app, "audit", audit={"verified": 70, "missing": 0, "altered": 0, "losses": []})
    body = (await _get(app, "/v1/cockpit/overview")).json()
    (flow,) = body["flows"]
    assert flow["health"] == "down"
    assert not flow["copying"]
    assert flow["reasons"][0] == "data-mirror not reporting for 45 s: nothing is copied"
    assert flow["audit"]["verified"] == 70
    assert not body["stale"]


async def test_a_healthy_flow_is_ok_with_its_figures() -> None:
    app = build_app()
    _status(app, "data-mirror", records_mirrored=500, topics=2)
    _status(app, "heartbeat", latency_ms=35)
    Feed(app.state.index).checkpoints([Checkpoint("g", "A.t", 0, 5, 5)], timestamp_ms=NOW_MS - 4_000)
    (flow,) = (await _get(app, "/v1/cockpit/overview")).json()["flows"]
    assert (flow["health"], flow["reasons"], flow["copying"]) == ("ok", [], True)
    assert (flow["records_mirrored"], flow["latency_ms"], flow["checkpoint_age_s"]) == (500, 35, 4.0)


async def test_records_lost_by_the_audit_put_the_flow_down_with_the_offsets() -> None:
    app = build_app()
    _status(app, "data-mirror")
    loss = "orders-0 missing 10-19 (10)"
    _status(app, "audit", audit={"verified": 5, "missing": 10, "altered": 0, "unexpected": 0, "losses": [loss]})
    (flow,) = (await _get(app, "/v1/cockpit/overview")).json()["flows"]
    assert flow["health"] == "down"
    assert flow["audit"]["losses"] == [loss]
    assert flow["reasons"] == ["audit: 10 records missing, 0 altered"]


def test_a_target_that_stopped_answering_the_translators_reads_makes_its_flows_stale() -> None:
    app = build_app()
    _status(app, "data-mirror")
    body = overview(
        app.state.index,
        NOW_MS,
        stale_after_s=30,
        feed_stale_after_s=10,
        unreachable={},
        fetched={"B": NOW_MS - 14_000},
    )
    assert body.stale
    (feed,) = (f for f in body.feeds if f.cluster == "B")
    assert feed.reason == "cluster B has not answered the translator's reads for 14 s"
    assert body.flows[0].stale
    assert body.flows[0].health == "warn"
    assert body.flows[0].reasons == ["stale: cluster B has not answered the translator's reads for 14 s"]
    gone = overview(
        app.state.index, NOW_MS, stale_after_s=30, feed_stale_after_s=10, unreachable={"B": 1.0}, fetched={}
    )
    assert gone.flows[0].reasons == ["stale: the translator cannot reach cluster B"]
    assert not overview(
        app.state.index, NOW_MS, stale_after_s=30, feed_stale_after_s=10, unreachable={}, fetched={"B": NOW_MS - 500}
    ).stale


async def test_partitions_are_filtered_sorted_and_paged_on_the_server() -> None:
    app = build_app()
    for partition in range(1000):
        _progress(app, "wide", partition, 10, 10 + partition % 7)
    page = (await _get(app, "/v1/flows/A/B/partitions?q=WIDE-99&limit=5")).json()
    assert (page["total"], page["matched"]) == (1000, 11)
    assert [p["partition"] for p in page["partitions"]] == [99, 990, 991, 992, 993]
    by_records = (await _get(app, "/v1/flows/A/B/partitions?sort=records&desc=true&limit=3&offset=1")).json()
    assert [p["records"] for p in by_records["partitions"]] == [6, 6, 6]
    assert by_records["topics"][0]["topic"] == "wide"
    assert (await _get(app, "/v1/flows/A/B/partitions?limit=501")).status_code == 422


async def test_groups_come_in_pages_with_their_checkpoints_ages() -> None:
    app = build_app()
    feed = Feed(app.state.index)
    feed.checkpoints([Checkpoint(f"app-{i}", "A.t", 0, 1, 1) for i in range(30)], timestamp_ms=NOW_MS - 2_000)
    feed.loaded()
    page = (await _get(app, "/v1/flows/A/B/group-summaries?q=app-2&limit=3")).json()
    assert page["matched"] == 11
    assert [(g["group"], g["newest_age_s"]) for g in page["groups"]] == [
        ("app-2", 2.0),
        ("app-20", 2.0),
        ("app-21", 2.0),
    ]


def test_the_history_keeps_an_hour_of_samples() -> None:
    app = build_app()
    ring = HistoryRing(interval_s=600)
    for step in range(10):
        ring.sample(app.state.index, NOW_MS + step * 600_000, stale_after_s=30)
    samples = ring.history("A->B").samples
    assert len(samples) == 6
    assert samples[0].ts_ms == NOW_MS + 4 * 600_000


async def test_the_cockpits_reads_need_the_token_where_their_family_does() -> None:
    app = build_app(translator_token=TOKEN, protected_endpoints="status,rpo")
    assert (await _get(app, "/v1/cockpit/overview")).status_code == 401
    assert (await _get(app, "/v1/flows/A/B/partitions")).status_code == 401
    assert (await _get(app, "/v1/cockpit/overview", TOKEN)).status_code == 200
    page = await _get(app, "/ui/")
    assert page.status_code == 200, "the page itself holds no data: it loads without the token"


async def test_the_page_is_served_from_the_package_with_a_strict_policy() -> None:
    app = build_app()
    page = await _get(app, "/ui/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy
    assert "default-src 'none'" in policy
    assert "unsafe-inline" not in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    assert '<script type="module" src="main.js"></script>' in page.text
    assert "http" not in page.text.split("<body>")[0].replace('"http-equiv', ""), "nothing loads from elsewhere"
    module = await _get(app, "/ui/main.js")
    assert module.headers["content-type"].startswith("text/javascript")
    again = await _get_conditional(app, "/ui/main.js", module.headers["etag"])
    assert again.status_code == 304
    assert (await _get(app, "/ui/..%2Fapp.py")).status_code == 404
    assert (await _get(app, "/ui/secret.py")).status_code == 404
    assert "/ui/" not in (await _get(app, "/openapi.json")).json()["paths"]


async def _get_conditional(app: FastAPI, url: str, etag: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.get(url, headers={"If-None-Match": etag})


def test_no_module_of_the_page_loads_anything_from_another_origin() -> None:
    from services.offset_translator.ui import STATIC_DIR

    for path in STATIC_DIR.iterdir():
        text = path.read_text().replace("http://www.w3.org/2000/svg", "")  # the SVG namespace names, loads nothing
        for marker in ("https://", "http://", "innerHTML", "eval(", "document.cookie", "localStorage"):
            assert marker not in text, (path.name, marker)
