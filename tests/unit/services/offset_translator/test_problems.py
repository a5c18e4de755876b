"""Errors the translator's handlers raise become problem JSON with a status that says what happened."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from services.offset_translator.problems import install


async def test_a_read_that_did_not_end_in_time_is_a_timeout_not_an_internal_error() -> None:
    app = FastAPI()
    install(app)

    @app.get("/slow")
    async def slow() -> None:
        raise TimeoutError("reading did not reach the end offsets in time (orders-0 at 10 of 90)")

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        answer = await client.get("/slow")
    assert answer.status_code == 504, answer.text
    assert answer.json()["detail"] == "timed out: reading did not reach the end offsets in time (orders-0 at 10 of 90)"
