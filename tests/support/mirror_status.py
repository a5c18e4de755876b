"""What data-mirror reports on its flows' targets (strait.status.internal), as `strait status` shows it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.control import ServiceStatus, read_statuses
from tests.support.waiting import wait_until


def mirror_status(props: Mapping[str, str], flow: str) -> ServiceStatus | None:
    """data-mirror's latest status of `flow`."""
    found = [s for s in read_statuses(props).values() if s.service == "data-mirror" and s.flow == flow]
    return max(found, key=lambda s: s.ts) if found else None


def wait_for_blocked(
    props: Mapping[str, str], flow: str, topic: str, partition: int, timeout_s: float = 60
) -> tuple[ServiceStatus, dict[str, Any]]:
    """Wait until data-mirror's status of `flow` lists `topic`-`partition` as blocked; that status and its entry
    (`topic`, `partition`, `offset`, `reason`)."""
    found: list[tuple[ServiceStatus, dict[str, Any]]] = []

    def listed() -> bool:
        status = mirror_status(props, flow)
        if status is not None:
            entries = status.details.get("blocked", [])
            found[:] = [(status, e) for e in entries if (e["topic"], e["partition"]) == (topic, partition)]
        return bool(found)

    wait_until(
        listed,
        timeout_s,
        f"{topic}-{partition} blocked in the status of {flow}",
        lambda: str(mirror_status(props, flow)),
    )
    return found[0]
