"""The app's lifespan with clusters that cannot be reached: not ready, errors reported, a clean stop."""

from __future__ import annotations

import asyncio
import gc
import time

import httpx

from services.offset_translator.app import create_app
from tests.unit.services.offset_translator.conftest import make_config, make_settings


async def test_unreachable_clusters_leave_it_unready_and_it_still_stops_cleanly() -> None:
    app = create_app(make_settings(status_interval_s=0.2, topology_refresh_s=0.2), make_config(), follow=True)
    service = app.state.service
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            deadline = time.monotonic() + 30
            while service.last_error is None:
                assert time.monotonic() < deadline, "no connection error was recorded"
                await asyncio.sleep(0.1)
            ready = await client.get("/ready")
            assert ready.status_code == 503
            assert ready.json()["loading"] == ["A.checkpoints.internal on B", "mm2-offset-syncs.B.internal on A"]
            assert ready.json()["last_error"]
            assert (await client.get("/health")).status_code == 200
            offsets = await client.get("/v1/flows/A/B/offsets", params={"group": "g"})
            assert offsets.status_code == 503
    assert service.crashed is None
    # Every client was closed: aiokafka warns (an error here) about any that was not.
    gc.collect()
