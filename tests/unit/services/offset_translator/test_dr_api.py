"""Disaster recovery over HTTP: the recovery point is read from data-mirror's progress on the target, and the actions
never run without the translator's token (not even on loopback), nor with a wrong one."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from shared.dr.records import FlowDrState, encode_record, state_key
from shared.kafka.follow import FollowedRecord
from shared.records.progress import CopyReport, ProgressKey, encode_progress
from tests.unit.services.offset_translator.conftest import AB, NOW_MS, build_app

TOKEN = "dr-token-value-123"
ACTIONS = [
    ("POST", "/v1/flows/A/B/dr/failover", {"dry_run": True}),
    ("POST", "/v1/flows/A/B/dr/failback", {"dry_run": True}),
    ("GET", "/v1/flows/A/B/dr/check", None),
]


async def _call(app: FastAPI, method: str, url: str, body: object = None, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.request(method, url, json=body, headers=headers)


def _progress(app: FastAPI, topic: str, partition: int, next_offset: int, end: int, behind_since: int | None) -> None:
    report = CopyReport(end_offset=end, behind_since_ms=behind_since)
    value = encode_progress(next_offset, report=report)
    key = ProgressKey("A->B", topic, partition).encode()
    app.state.index.on_progress_records(AB, [FollowedRecord(1, key, value, NOW_MS)])


async def test_the_recovery_point_is_what_the_target_lacks_per_topic_and_partition() -> None:
    app = build_app()
    _progress(app, "orders", 0, 90, 100, NOW_MS - 3_000)
    _progress(app, "orders", 1, 40, 40, None)
    answer = await _call(app, "GET", "/v1/flows/A/B/rpo?partitions=true")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["rpo"]["records"], body["rpo"]["seconds"]) == (10, 3.0)
    assert [(p["partition"], p["records"]) for p in body["partitions"]] == [(0, 10), (1, 0)]
    assert body["note"], "without data-mirror's status the answer says its figures are its last commits"


async def test_the_flows_dr_state_is_served_from_the_target() -> None:
    app = build_app()
    state = FlowDrState(flow="A->B", state="failed-over", action="failover", report_id="r9")
    app.state.index.on_dr_records("B", [FollowedRecord(1, state_key("A->B"), encode_record(state), NOW_MS)])
    body = (await _call(app, "GET", "/v1/flows/A/B/dr")).json()
    assert body["state"]["state"] == "failed-over"
    assert body["last_report"] is None


async def test_without_a_token_the_actions_are_off_even_on_loopback() -> None:
    app = build_app(host="127.0.0.1")
    for method, url, body in ACTIONS:
        answer = await _call(app, method, url, body)
        assert answer.status_code == 403, (url, answer.text)
        assert "token" in answer.json()["detail"]


async def test_with_a_token_the_actions_need_it() -> None:
    app = build_app(translator_token=TOKEN)
    for method, url, body in ACTIONS:
        assert (await _call(app, method, url, body)).status_code == 401, url
        assert (await _call(app, method, url, body, token="wrong")).status_code == 401, url


async def test_a_request_with_an_unknown_field_is_refused_naming_it() -> None:
    app = build_app(translator_token=TOKEN)
    answer = await _call(app, "POST", "/v1/flows/A/B/dr/failover", {"dry_run": True, "plannned": True}, TOKEN)
    assert answer.status_code == 422
    assert "plannned" in answer.text


async def test_a_groups_pattern_that_is_no_regex_is_refused_naming_it() -> None:
    app = build_app(translator_token=TOKEN)
    answer = await _call(app, "POST", "/v1/flows/A/B/dr/failback", {"dry_run": True, "groups": "app-["}, TOKEN)
    assert answer.status_code == 422, answer.text
    assert "is not a regular expression" in answer.json()["detail"], answer.text


async def test_an_action_on_a_cluster_the_config_does_not_define_is_not_found() -> None:
    app = build_app(translator_token=TOKEN)
    for method, url, body in ACTIONS:
        answer = await _call(app, method, url.replace("/A/B/", "/A/Z/"), body, TOKEN)
        assert answer.status_code == 404, (url, answer.text)
        assert "'Z'" in answer.json()["detail"], answer.text
    answer = await _call(app, "POST", "/v1/flows/A/A/dr/failover", {"dry_run": True}, TOKEN)
    assert answer.status_code == 404, answer.text
    assert "same source and target" in answer.json()["detail"]


def test_an_http_action_waits_at_most_the_translators_bound() -> None:
    actions = build_app(translator_token=TOKEN, dr_max_wait_s=45).state.dr_actions
    assert (actions.wait_s(3600), actions.wait_s(10)) == (45, 10)
