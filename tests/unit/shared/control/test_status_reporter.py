"""The one status publisher: one key rule, best effort, a failure logged when it changes and once on recovery."""

from __future__ import annotations

from typing import Any, cast

from structlog.testing import capture_logs

from shared.control import ControlPublisher, ServiceStatus, StatusReporter


class _Publisher:
    """Records what it is given; raises `failure` while it is set."""

    def __init__(self) -> None:
        self.published: list[ServiceStatus] = []
        self.failure: Exception | None = None

    async def publish_status(self, status: ServiceStatus) -> None:
        if self.failure is not None:
            raise self.failure
        self.published.append(status)


def _reporter(publisher: _Publisher, details: dict[str, Any]) -> StatusReporter:
    return StatusReporter(
        [cast(ControlPublisher, publisher)],
        service="checkpoint",
        instance_id="host-1",
        flow="A->B",
        snapshot=lambda: ("running", None, details),
    )


async def test_a_status_is_keyed_by_instance_and_flow_and_carries_the_snapshot() -> None:
    publisher = _Publisher()
    details = {"groups": 3}
    reporter = _reporter(publisher, details)
    assert await reporter.publish()
    details["groups"] = 4
    assert await reporter.publish("stopped")
    first, last = publisher.published
    assert (first.instance, first.flow, first.service, first.state) == ("host-1/A->B", "A->B", "checkpoint", "running")
    assert (last.state, last.details) == ("stopped", {"groups": 4})


async def test_a_failure_never_raises_and_is_logged_when_it_changes_and_when_it_ends() -> None:
    publisher = _Publisher()
    reporter = _reporter(publisher, {})
    with capture_logs() as logs:
        publisher.failure = OSError("cluster B: not acknowledged")
        assert not await reporter.publish()
        assert not await reporter.publish()  # the same failure again: not logged again
        publisher.failure = OSError("cluster B: unreachable")
        assert not await reporter.publish()
        assert reporter.failure == "cluster B: unreachable"
        publisher.failure = None
        assert await reporter.publish()
        assert await reporter.publish()
    assert [(log["event"], log.get("error") or log.get("after")) for log in logs] == [
        ("status_publish_failed", "cluster B: not acknowledged"),
        ("status_publish_failed", "cluster B: unreachable"),
        ("status_publish_recovered", "cluster B: unreachable"),
    ]
    assert reporter.failure is None
    assert len(publisher.published) == 2
