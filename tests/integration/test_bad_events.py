"""Garbage in the topics Strait reads: each reader skips it with a warning naming topic and offset, then goes on.

Written into each topic before a valid record: random bytes, JSON of the wrong shape, MM2 records of an unknown
version, a 5000-digit number and JSON nested 100,000 deep (which `json` refuses with a RecursionError, not a
ValueError). The readers: the control link data-mirror polls and `follow_events` (strait.control.internal),
`read_statuses` and the translator (strait.status.internal), data-mirror's progress loader (its progress topic),
and, as real processes, checkpoint (offset syncs, its checkpoints topic), heartbeat (mirrored heartbeats) and
the offset translator (checkpoints, offset syncs, heartbeats, status). A valid record written after the garbage
must still take effect.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import httpx
from confluent_kafka import TopicPartition
from structlog.testing import capture_logs

from services.data_mirror.control_link import ControlLink
from shared.control import CONTROL_TOPIC, STATUS_TOPIC, RemoteTopic, ServiceStatus, TopicsChanged, encode_event
from shared.control.channel import follow_events
from shared.control.codec import Event
from shared.control.status_reader import read_statuses
from shared.control.topic_names import progress_topic
from shared.errors import CodecError
from shared.kafka.factories import confluent_admin, confluent_producer
from shared.kafka.partition_reader import read_to_end
from shared.kafka.topics import ensure_internal_topic
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from shared.progress_store import load_progress
from shared.records import Checkpoint, Heartbeat
from shared.records.progress import ProgressKey, encode_progress
from tests.support.kafka_io import commit_offsets, make_topic, produce
from tests.support.mirror_sim import MirrorSimulation
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess

Pair = tuple[bytes | None, bytes | None]
JSON_GARBAGE: list[bytes] = [
    b"\xff\xfe\x00 not utf-8",
    b"not json at all",
    b"[1, 2, 3]",
    b'{"type": "no-such-event", "version": 1}',
    b'{"type": "topics-changed", "version": 1}',  # required fields missing
    b'{"type": "status", "version": 99, "flow": ""}',  # from a newer Strait
    b"1" * 5000,  # int() refuses more than 4300 digits
    b"[" * 100_000,  # json raises RecursionError
]
BINARY_GARBAGE: list[Pair] = [
    (b"\x00", b"\x00\x01"),
    (bytes(range(40)), bytes(range(40, 0, -1))),
    (b'{"type": "status"}', b'{"not": "an MM2 record"}'),
    (struct.pack(">h", 32767) + b"x", struct.pack(">hqq", 0, 1, 2)),  # a string length beyond the bytes
    (Checkpoint("g", "t", 0, 1, 1).record_key(), struct.pack(">h", 99) + bytes(30)),  # an unknown version
    (Heartbeat("A", "B", 1).record_key(), b"\x00"),
]
DEADLINE_S = 120


def produce_at(props: Mapping[str, str], topic: str, pairs: list[Pair]) -> list[int]:
    """Produce to partition 0 in order; the offsets the records got."""
    producer = confluent_producer(props, **{"enable.idempotence": True})
    offsets: list[int] = []
    failures: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(str(err))
        else:
            offsets.append(msg.offset())

    for key, value in pairs:
        producer.produce(topic, key=key, value=value, partition=0, on_delivery=delivered)
        producer.flush(30)  # one at a time: the offsets come back in order
    assert not failures, failures
    return offsets


def json_garbage(unique: str) -> list[Pair]:
    """The JSON garbage, keyed (a compacted topic keeps one record per key)."""
    return [(f"garbage-{unique}-{i}".encode(), value) for i, value in enumerate(JSON_GARBAGE)]


def warned(logs: Sequence[Mapping[str, Any]], event: str, topic: str) -> set[int]:
    """Offsets of `topic` that warnings `event` name (captured in-process, or a process's JSON log lines)."""
    return {
        entry["offset"]
        for entry in logs
        if entry.get("event") == event
        and entry.get("topic") == topic
        and (entry.get("log_level") or entry.get("level")) == "warning"
    }


def wait_until(what: str, check: Any, timeout_s: float = DEADLINE_S) -> Any:
    """Poll `check` until it returns something truthy."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


# -- in-process readers ---------------------------------------------------------------------------------------


def test_control_link_of_data_mirror_skips_garbage_and_sees_the_next_event(
    cluster_b: KafkaCluster, unique: str
) -> None:
    props = cluster_b.client_properties()
    flow = f"S{unique}->T{unique}"
    event = TopicsChanged(flow=flow, topics=(RemoteTopic(source_topic="t", remote_topic="S.t", partitions=1),))
    link = ControlLink.open(props, {flow}, replication_factor=1)
    try:
        # The link reads from the end, resolved when its first fetch starts: an event written before that is not
        # seen. One more event per try tells when it is positioned; then whatever is left of them is read.
        def positioned() -> bool:
            produce_at(props, CONTROL_TOPIC, [(b"first", encode_event(event))])
            return link.topics_changed()

        wait_until("the link to read a first event", positioned, 60)
        time.sleep(1)
        link.topics_changed()
        with capture_logs() as logs:
            offsets = produce_at(props, CONTROL_TOPIC, [*json_garbage(unique), (b"valid", encode_event(event))])
            assert wait_until("the valid event after the garbage", link.topics_changed, 60)
        assert warned(logs, "control_event_skipped", CONTROL_TOPIC) == set(offsets[:-1])
        assert link.topics_changed() is False, "nothing more arrived"
    finally:
        link.close()


async def test_follow_events_skips_garbage_and_yields_the_next_event(cluster_b: KafkaCluster, unique: str) -> None:
    props = cluster_b.client_properties()
    flow = f"S{unique}->T{unique}"
    with capture_logs() as logs:
        offsets = produce_at(props, CONTROL_TOPIC, json_garbage(unique))
        produce_at(props, CONTROL_TOPIC, [(b"valid", encode_event(TopicsChanged(flow=flow, topics=())))])
        events = cast(AsyncGenerator[Event, None], follow_events(props, CONTROL_TOPIC, from_beginning=True))
        deadline = time.monotonic() + DEADLINE_S
        async for event in events:
            if isinstance(event, TopicsChanged) and event.flow == flow:
                break
            assert time.monotonic() < deadline, "the valid event never came"
        await events.aclose()
    assert warned(logs, "control_event_skipped", CONTROL_TOPIC) >= set(offsets)


def test_read_statuses_skips_garbage_and_returns_the_valid_status(cluster_b: KafkaCluster, unique: str) -> None:
    props = cluster_b.client_properties()
    ensure_internal_topic(confluent_admin(props), STATUS_TOPIC, replication_factor=1)
    status = ServiceStatus(
        flow=f"S{unique}->T{unique}", service="bad-events", instance=f"valid-{unique}", state="running"
    )
    with capture_logs() as logs:
        offsets = produce_at(props, STATUS_TOPIC, json_garbage(unique))
        produce_at(props, STATUS_TOPIC, [(status.instance.encode(), encode_event(status))])
        statuses = read_statuses(props, timeout_s=60)
    assert statuses[status.instance] == status
    assert warned(logs, "control_event_skipped", STATUS_TOPIC) >= set(offsets)


def test_progress_loader_skips_garbage_and_keeps_the_valid_progress(cluster_b: KafkaCluster, unique: str) -> None:
    props = cluster_b.client_properties()
    topic = progress_topic(f"S{unique}")
    flow = f"S{unique}->T{unique}"
    ensure_internal_topic(confluent_admin(props), topic, replication_factor=1)
    garbage: list[Pair] = [
        *json_garbage(unique),  # keys that are not progress keys
        (b"[1, 2]", encode_progress(5)),  # a key of the wrong shape
        (ProgressKey(flow, "orders", 0).encode(), b'{"next_offset": -3}'),
        (ProgressKey(flow, "orders", 0).encode(), b'{"next_offset": "12"}'),
        (ProgressKey(flow, "orders", 0).encode(), b"[" * 100_000),
    ]
    with capture_logs() as logs:
        offsets = produce_at(props, topic, garbage)
        produce_at(props, topic, [(ProgressKey(flow, "orders", 0).encode(), encode_progress(42))])
        progress = load_progress(props, topic, flow, timeout_s=60)
    assert progress[("orders", 0)].next_offset == 42
    assert warned(logs, "progress_record_skipped", topic) == set(offsets)


# -- services as processes ------------------------------------------------------------------------------------


class Setup:
    """Flow s<u>->t<u> over the shared clusters, with garbage at the start of every topic its services read."""

    def __init__(self, a: KafkaCluster, b: KafkaCluster, unique: str, tmp_path: Path) -> None:
        self.unique = unique
        self.source, self.target = f"s{unique}", f"t{unique}"
        self.a, self.b = a.client_properties(), b.client_properties()
        self.topic, self.group = f"orders-{unique}", f"g{unique}"
        self.mirror = MirrorSimulation(self.a, self.b, source_alias=self.source, target_alias=self.target)
        self.syncs_topic = self.mirror.offset_syncs_topic  # on the source
        self.checkpoints_topic = f"{self.source}.checkpoints.internal"  # on the target
        self.heartbeats_topic = f"{self.source}.heartbeats"  # on the target
        self.config = write_mm2_config(
            tmp_path / "mm2.properties",
            {self.source: a, self.target: b},
            {
                f"{self.source}->{self.target}": {
                    "topics": self.topic,
                    "groups": self.group,
                    "emit.checkpoints.interval.seconds": "1",
                    "refresh.groups.interval.seconds": "1",
                }
            },
        )
        self.garbage: dict[str, list[int]] = {}

    def spoil_every_topic(self) -> None:
        """Create each topic the services read and put garbage at its start."""
        for props, topic in ((self.a, self.syncs_topic), (self.b, self.checkpoints_topic)):
            ensure_internal_topic(confluent_admin(props), topic, replication_factor=1)
        make_topic(self.b, self.heartbeats_topic, 1)
        ensure_internal_topic(confluent_admin(self.b), STATUS_TOPIC, replication_factor=1)
        self.garbage[self.syncs_topic] = produce_at(self.a, self.syncs_topic, BINARY_GARBAGE)
        self.garbage[self.checkpoints_topic] = produce_at(self.b, self.checkpoints_topic, BINARY_GARBAGE)
        self.garbage[self.heartbeats_topic] = produce_at(self.b, self.heartbeats_topic, BINARY_GARBAGE)
        self.garbage[STATUS_TOPIC] = produce_at(self.b, STATUS_TOPIC, json_garbage(self.unique))

    def mirror_records_and_commit(self) -> None:
        """What data-mirror and an application would do: copy 200 records (with syncs), commit at 150."""
        make_topic(self.a, self.topic, 1)
        produce(self.a, self.topic, [(None, f"r{i}".encode()) for i in range(200)], partition=0)
        self.mirror.mirror(self.topic)
        commit_offsets(self.a, self.group, [TopicPartition(self.topic, 0, 150)])

    @contextmanager
    def heartbeats_arriving(self) -> Iterator[None]:
        """A mirrored heartbeat every second, as data-mirror copies them."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.is_set():
                heartbeat = Heartbeat(self.source, self.target, int(time.time() * 1000))
                produce(self.b, self.heartbeats_topic, [(heartbeat.record_key(), heartbeat.record_value())])
                stop.wait(1)

        thread = threading.Thread(target=beat, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(30)


def _process_warnings(process: ServiceProcess, event: str, topic: str) -> set[int]:
    return warned(process.logs(), event, topic)


def test_services_skip_garbage_in_every_topic_they_read_and_keep_working(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    setup = Setup(cluster_a, cluster_b, unique, tmp_path)
    setup.spoil_every_topic()
    port = free_port()
    checkpoint = ServiceProcess("checkpoint", setup.config, tmp_path, "--instance-id", f"cp-{unique}")
    heartbeat = ServiceProcess("heartbeat", setup.config, tmp_path, "--instance-id", f"hb-{unique}")
    translator = ServiceProcess("offset_translator", setup.config, tmp_path, "--port", str(port))
    with checkpoint, heartbeat, translator, setup.heartbeats_arriving():
        setup.mirror_records_and_commit()

        # checkpoint: skips the garbage syncs and its own garbage checkpoints, then checkpoints the group.
        def checkpoint_of_group() -> Checkpoint | None:
            for record in read_to_end(setup.b, setup.checkpoints_topic, timeout_s=30):
                try:
                    found = Checkpoint.decode(record.key or b"", record.value or b"")
                except CodecError:  # the garbage this test wrote
                    continue
                if found.group == setup.group:
                    return found
            return None

        found = wait_until("a checkpoint of the group", checkpoint_of_group)
        assert (found.upstream_offset, found.downstream_offset) == (150, 150)
        assert _process_warnings(checkpoint, "invalid_offset_sync_skipped", setup.syncs_topic) == set(
            setup.garbage[setup.syncs_topic]
        )
        assert _process_warnings(checkpoint, "invalid_checkpoint_skipped", setup.checkpoints_topic) == set(
            setup.garbage[setup.checkpoints_topic]
        )

        # heartbeat: skips the garbage heartbeats and reports the flow live from the valid ones.
        heartbeat.wait_for_log("flow_live", timeout_s=DEADLINE_S)
        assert _process_warnings(heartbeat, "invalid_heartbeat_skipped", setup.heartbeats_topic) == set(
            setup.garbage[setup.heartbeats_topic]
        )

        # translator: skips garbage in all four topics; answers from the valid records after it.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            flow_path = f"/v1/flows/{setup.source}/{setup.target}"
            answers: list[str] = []

            def answer(path: str, **params: str | int) -> Any:
                """The JSON of a 200 answer, else None (not listening yet, still loading, not known yet)."""
                try:
                    response = client.get(f"{flow_path}/{path}", params=params)
                except httpx.TransportError as exc:
                    answers.append(repr(exc))
                    return None
                answers.append(f"{response.status_code} {response.text[:300]}")
                return response.json() if response.status_code == 200 else None

            def offsets() -> list[dict[str, Any]]:
                body = answer("offsets", group=setup.group)
                return body["offsets"] if body else []

            def status() -> dict[str, Any] | None:
                body = answer("status")
                services = {i["instance"].split("/")[0] for i in (body or {}).get("instances", [])}  # id/flow
                live = body is not None and {f"cp-{unique}", f"hb-{unique}"} <= services
                return body if live and body.get("heartbeat_age_s") is not None else None

            # The last record's offset: if the translator first read the syncs after they were all written, it
            # keeps only the newest one (MM2's pessimistic load) and has no answer for older offsets.
            def translation() -> dict[str, Any] | None:
                return answer("translate", topic=setup.topic, partition=0, offset=199)  # type: ignore[no-any-return]

            try:
                assert wait_until("the translator's answer", offsets)[0]["offset"] == 150
                wait_until("the statuses and heartbeats of the flow", status)
                assert wait_until("a translation", translation)["downstream_offset"] == 199
            except AssertionError as exc:
                raise AssertionError(f"{exc}; last answer: {answers[-1:]}") from None
        for topic, offsets_written in setup.garbage.items():
            if topic == STATUS_TOPIC:
                found_offsets = _process_warnings(translator, "control_event_skipped", topic)
            else:
                found_offsets = _process_warnings(translator, "record_skipped", topic)
            assert found_offsets >= set(offsets_written), topic

        for process in (checkpoint, heartbeat, translator):
            assert process.stop() == 0, process.tail()
