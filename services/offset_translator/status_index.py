"""Latest status per service instance (from `strait.status.internal` of each target cluster) and the newest
mirrored heartbeat per flow (from `<source>.heartbeats` on the target)."""

from __future__ import annotations

from shared.control.events import ServiceStatus

FlowKey = tuple[str, str]


class StatusIndex:
    """cluster -> instance -> latest ServiceStatus, and flow -> newest heartbeat timestamp (epoch ms)."""

    def __init__(self) -> None:
        self._statuses: dict[str, dict[str, ServiceStatus]] = {}
        self._heartbeats: dict[FlowKey, int] = {}

    def apply_status(self, cluster: str, status: ServiceStatus) -> None:
        """Keep `status` as its instance's latest on `cluster`."""
        self._statuses.setdefault(cluster, {})[status.instance] = status

    def remove_instance(self, cluster: str, instance: str) -> None:
        """Forget an instance (a tombstone on the compacted status topic)."""
        self._statuses.get(cluster, {}).pop(instance, None)

    def statuses(self, cluster: str) -> list[ServiceStatus]:
        """Every instance's latest status on `cluster`."""
        return list(self._statuses.get(cluster, {}).values())

    def apply_heartbeat(self, flow: FlowKey, timestamp_ms: int) -> None:
        """Remember the newest heartbeat timestamp seen for `flow`."""
        if timestamp_ms > self._heartbeats.get(flow, -1):
            self._heartbeats[flow] = timestamp_ms

    def heartbeat_ms(self, flow: FlowKey) -> int | None:
        """Timestamp of the newest mirrored heartbeat of `flow`, or None if none arrived yet."""
        return self._heartbeats.get(flow)
