"""Services coordinate through real control and status topics: events arrive in order, status is latest-wins."""

from __future__ import annotations

import asyncio

from shared.control import (
    ControlPublisher,
    FlowPaused,
    FlowResumed,
    RemoteTopic,
    StatusReporter,
    TopicsChanged,
    follow_events,
    read_statuses,
)
from shared.localkafka import KafkaCluster


async def test_events_published_are_followed_from_the_beginning(cluster_b: KafkaCluster, unique: str) -> None:
    props = cluster_b.client_properties()
    publisher = ControlPublisher(props, replication_factor=1)
    await publisher.start()
    flow = f"A{unique}->B"
    sent = [
        TopicsChanged(flow=flow, topics=(RemoteTopic(source_topic="o", remote_topic="A.o", partitions=3),)),
        FlowPaused(flow=flow, reason="no WRITE on A.o"),
        FlowResumed(flow=flow),
    ]
    try:
        for event in sent:
            await publisher.publish(event)
    finally:
        await publisher.stop()
        await publisher.stop()

    received = []
    async with asyncio.timeout(30):
        async for event in follow_events(props):
            if event.flow == flow:
                received.append(event)
            if len(received) == len(sent):
                break
    assert received == sent


async def test_status_topic_keeps_the_latest_status_per_instance(cluster_b: KafkaCluster, unique: str) -> None:
    props = cluster_b.client_properties()
    publisher = ControlPublisher(props, replication_factor=1)
    await publisher.start()
    lag = {"value": 10}
    reporter = StatusReporter(
        [publisher],
        service="checkpoint",
        instance_id=f"inst-{unique}",
        flow="A->B",
        snapshot=lambda: ("running", None, {"lag": lag["value"]}),
    )
    try:
        await reporter.publish()
        lag["value"] = 3
        await reporter.publish()
        await reporter.publish(state="stopped")
    finally:
        await publisher.stop()
    statuses = await asyncio.to_thread(read_statuses, props)
    mine = statuses[f"inst-{unique}/A->B"]
    assert mine.state == "stopped"
    assert mine.details == {"lag": 3}
    assert mine.service == "checkpoint"
