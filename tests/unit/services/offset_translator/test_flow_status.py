"""A flow's state from its instances: the worst live state; a service that stopped reporting degrades it."""

from __future__ import annotations

from typing import Any

import pytest

from shared.control.events import ServiceStatus
from shared.flow_status import summarize_flow

NOW = 1_000_000


def status(
    service: str, instance: str, state: Any, age_s: float = 1, flow: str = "A->B", **details: Any
) -> ServiceStatus:
    return ServiceStatus(
        flow=flow, service=service, instance=instance, state=state, ts=int(NOW - age_s * 1000), details=details
    )


@pytest.mark.parametrize(
    ("statuses", "state"),
    [
        ([], "unknown"),
        ([status("data-mirror", "d1", "running"), status("checkpoint", "c1", "running")], "running"),
        ([status("data-mirror", "d1", "running"), status("checkpoint", "c1", "paused")], "paused"),
        ([status("data-mirror", "d1", "failed"), status("checkpoint", "c1", "degraded")], "failed"),
        ([status("data-mirror", "d1", "stopped", age_s=500)], "stopped"),
        # A dead standby of a service that still runs does not matter ...
        ([status("topic-sync", "t1", "running"), status("topic-sync", "t2", "running", age_s=120)], "running"),
        # ... a service with no live instance left does.
        ([status("topic-sync", "t1", "running"), status("data-mirror", "d1", "running", age_s=120)], "degraded"),
        ([status("data-mirror", "d1", "running", age_s=120)], "degraded"),
        ([status("data-mirror", "d1", "running", flow="B->A")], "unknown"),
        ([status("heartbeat", "h1", "running", flow="")], "running"),
    ],
)
def test_flow_state(statuses: list[ServiceStatus], state: str) -> None:
    assert summarize_flow("A", "B", statuses, now_ms=NOW, stale_after_s=30).state == state


def test_figures_from_live_instances_only() -> None:
    statuses = [
        status("data-mirror", "d1", "running", records_behind=5, topics=2, heartbeat_age_s=1.5),
        status("data-mirror", "d2", "running", records_behind=7, topics=4, stalled_partitions=["t-1", "t-0"]),
        status("data-mirror", "d3", "running", age_s=300, records_behind=1000),
        status("checkpoint", "c1", "running", records_behind=True),
    ]
    summary = summarize_flow("A", "B", statuses, now_ms=NOW, stale_after_s=30)
    assert summary.records_behind == 12
    assert summary.topics == 4
    assert summary.heartbeat_age_s == 1.5
    assert summary.stalled_partitions == ["t-0", "t-1"]
    assert [i.stale for i in summary.instances] == [False, False, False, True]
    # A heartbeat actually read from the mirrored topic wins over what instances report.
    assert summarize_flow("A", "B", statuses, now_ms=NOW, heartbeat_ts_ms=NOW - 4000).heartbeat_age_s == 4.0
