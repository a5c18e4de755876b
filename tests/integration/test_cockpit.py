"""The cockpit in a real Chromium (Debian's, driven by Playwright) against real brokers and every service.

One pair of clusters of this module's own (its target is stopped at the end) and one set of services: A->B copies
`orders` and a topic of 1,000 partitions, B->A's data-mirror is killed. The overview marks A->B healthy and B->A not
copying within seconds; a flow's page lists the 1,000 partitions and filters them on the server; the failover plan
shows the offsets `strait failover --dry-run` prints; the failover without the token is refused and nothing moves,
with it the group moves on the broker and the report appears; the stale banner appears once the target is gone.
Every page is photographed into STRAIT_COCKPIT_SCREENSHOTS (a temporary folder unless set; docs/cockpit/ holds the
committed ones).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

from shared.kafka.factories import confluent_admin, confluent_producer
from shared.localkafka import KafkaCluster
from shared.localkafka.cluster import running
from shared.localkafka.ports import free_port
from tests.support.kafka_io import commit_offsets, end_offsets, make_topic, produce
from tests.support.mm2_config import write_mm2_config
from tests.support.service_process import ServiceProcess
from tests.support.waiting import wait_until

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium dials Google's services, which a closed network refuses.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS_ENV = "STRAIT_COCKPIT_SCREENSHOTS"
TOKEN = "cockpit-test-token-0123456789"
GROUP = "billing"
WIDE_PARTITIONS = 1000
ORDERS_PARTITIONS = 3
STALE_AFTER_S = 6  # the translator's: a service's status this old is stale
FEED_STALE_AFTER_S = 5  # ... and a target that has not answered the translator's fetches this long
VIEWPORT = {"width": 1280, "height": 900}


@dataclass
class Cockpit:
    """The running setup: clusters, config, the translator's URL and the services by name."""

    a: KafkaCluster
    b: KafkaCluster
    config: Path
    url: str
    services: dict[str, ServiceProcess]


def _services(config: Path, logs: Path, port: int) -> dict[str, ServiceProcess]:
    quick = {"STRAIT_STATUS_INTERVAL_S": "1"}
    mirror_env = {**quick, "STRAIT_COMMIT_INTERVAL_MS": "500"}
    translator_env = {
        **quick,
        "STRAIT_TRANSLATOR_TOKEN": TOKEN,
        "STRAIT_STATUS_STALE_AFTER_S": str(STALE_AFTER_S),
        "STRAIT_FEED_STALE_AFTER_S": str(FEED_STALE_AFTER_S),
        "STRAIT_HISTORY_INTERVAL_S": "1",
        "STRAIT_DR_MAX_WAIT_S": "120",
    }
    return {
        "topic_sync": ServiceProcess("topic_sync", config, logs, env=quick),
        "checkpoint": ServiceProcess("checkpoint", config, logs, env=quick),
        "heartbeat": ServiceProcess("heartbeat", config, logs, env=quick),
        "audit": ServiceProcess("audit", config, logs, env={**quick, "STRAIT_AUDIT_INTERVAL_S": "1"}),
        "mirror_ab": ServiceProcess("data_mirror", config, logs, "--flows", "A->B", env=mirror_env),
        "mirror_ba": ServiceProcess("data_mirror", config, logs, "--flows", "B->A", env=mirror_env),
        "translator": ServiceProcess("offset_translator", config, logs, "--port", str(port), env=translator_env),
    }


@pytest.fixture(scope="module")
def cockpit(kafka_runtime: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cockpit]:
    """Clusters of its own, A->B and B->A configured, every service running, `orders` read by GROUP on A."""
    work = tmp_path_factory.mktemp("cockpit")
    with running(KafkaCluster("CKA"), KafkaCluster("CKB")) as (a, b):
        settings = {
            "emit.checkpoints.interval.seconds": "1",
            "refresh.topics.interval.seconds": "1",
            "sync.topic.acls.enabled": "false",
        }
        flows = {
            "A->B": {**settings, "topics": "orders|wide", "groups": GROUP},
            "B->A": {**settings, "topics": "back", "groups": "none"},
        }
        config = write_mm2_config(work / "mm2.properties", {"A": a, "B": b}, flows)
        make_topic(a.client_properties(), "orders", partitions=ORDERS_PARTITIONS)
        make_topic(a.client_properties(), "wide", partitions=WIDE_PARTITIONS)
        make_topic(b.client_properties(), "back", partitions=1)
        produce(a.client_properties(), "orders", [(f"k{i}".encode(), f"order-{i}".encode()) for i in range(90)])
        _one_record_each(a, "wide", WIDE_PARTITIONS)
        port = free_port()
        services = _services(config, work, port)
        try:
            for service in services.values():
                service.start()
            setup = Cockpit(a, b, config, f"http://127.0.0.1:{port}", services)
            wait_until(lambda: _copied(setup), 300, "orders and wide copied to B", lambda: _tails(services))
            ends = end_offsets(a.client_properties(), "orders")
            commit_offsets(
                a.client_properties(),
                GROUP,
                [TopicPartition("orders", p, max(0, end - 3 - p)) for p, end in enumerate(ends)],
            )
            yield setup
        finally:
            for service in services.values():  # B is gone by now: a clean stop would wait on it, and is not tested
                service.kill()


def _one_record_each(cluster: KafkaCluster, topic: str, partitions: int) -> None:
    """One record in every partition (each then has a copy position), through one producer."""
    producer = confluent_producer(cluster.client_properties(), **{"linger.ms": 20})
    for partition in range(partitions):
        producer.produce(topic, value=b"w", partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0, f"records to {topic} not delivered within 60 s"


def _copied(setup: Cockpit) -> bool:
    try:
        orders = sum(end_offsets(setup.b.client_properties(), "A.orders"))
        wide = sum(end_offsets(setup.b.client_properties(), "A.wide"))
    except Exception:
        return False
    return orders == 90 and wide == WIDE_PARTITIONS


def _tails(services: dict[str, ServiceProcess]) -> str:
    return "\n".join(f"--- {name}:\n{service.tail(1500)}" for name, service in services.items())


@pytest.fixture(scope="module")
def shots() -> Iterator[Path]:
    """Where the screenshots go: STRAIT_COCKPIT_SCREENSHOTS, or a temporary folder removed afterwards."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    if chosen:
        path = Path(chosen)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="cockpit-shots-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium through Playwright (which never downloads a browser of its own here)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium")
    with playwright_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Any, cockpit: Cockpit) -> Iterator[Any]:
    """A fresh tab (nothing in its sessionStorage) whose console errors fail the test, except a refused request."""
    context = browser.new_context(viewport=VIEWPORT, base_url=cockpit.url)
    tab = context.new_page()
    problems: list[str] = []
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" and "status of 401" not in message.text and "status of 409" not in message.text
            else None
        ),
    )
    try:
        yield tab
        assert not problems, f"the page logged errors: {problems}"
    finally:
        context.close()


def _flow_row(page: Any, flow: str) -> Any:
    return page.locator(f'tr.flow[data-flow="{flow}"]')


def test_the_overview_marks_a_flow_whose_data_mirror_was_killed_within_seconds(
    cockpit: Cockpit, page: Any, shots: Path
) -> None:
    expect = playwright_api.expect
    page.goto("/ui/")
    expect(_flow_row(page, "A->B")).to_have_attribute("data-health", "ok", timeout=120_000)
    expect(_flow_row(page, "B->A")).to_have_count(1)
    _wait_copying(cockpit, "B->A")
    cockpit.services["mirror_ba"].kill()
    killed = time.monotonic()
    expect(_flow_row(page, "B->A")).to_have_attribute("data-health", "down", timeout=60_000)
    took_s = time.monotonic() - killed
    assert took_s < STALE_AFTER_S + 10, f"the killed data-mirror showed after {took_s:.1f} s"
    expect(_flow_row(page, "B->A")).to_contain_text("nothing is copied")
    expect(_flow_row(page, "A->B")).to_have_attribute("data-health", "ok")
    expect(page.locator("tbody#flows tr.flow").first).to_have_attribute("data-flow", "B->A")  # trouble first
    page.screenshot(path=str(shots / "overview.png"), full_page=True)
    page.emulate_media(color_scheme="dark")
    page.screenshot(path=str(shots / "overview-dark.png"), full_page=True)


def _wait_copying(cockpit: Cockpit, flow: str) -> None:
    def copying() -> bool:
        body = httpx.get(f"{cockpit.url}/v1/cockpit/overview", timeout=10).json()
        return any(f["flow"] == flow and f["copying"] for f in body["flows"])

    wait_until(copying, 180, f"{flow}'s data-mirror to report it copying", lambda: cockpit.services["mirror_ba"].tail())


def test_a_flows_page_lists_a_thousand_partitions_and_filters_them(cockpit: Cockpit, page: Any, shots: Path) -> None:
    expect = playwright_api.expect
    page.goto("/ui/#/flow/A/B")
    rows = page.locator("#partitions tbody tr")
    expect(rows).to_have_count(50, timeout=60_000)  # one page, never all of them
    page.fill("#partitions-filter", "wide-")
    expect(page.locator("#partitions .toolbar")).to_contain_text(f"of {WIDE_PARTITIONS:,} (", timeout=30_000)
    page.fill("#partitions-filter", "wide-99")
    expect(rows).to_have_count(11, timeout=30_000)
    expect(rows.first).to_contain_text("wide-99")
    expect(rows.last).to_contain_text("wide-999")
    page.click('#partitions button[data-sort="topic"]')  # descending
    expect(rows.first).to_contain_text("wide-999")
    expect(page.locator("#topic-table")).to_contain_text("wide")
    page.locator("#groups button", has_text="Show").first.click()
    expect(page.locator("#group-offsets tbody tr")).to_have_count(ORDERS_PARTITIONS, timeout=30_000)
    expect(page.locator("svg.chart path.series").first).to_be_attached(timeout=30_000)
    expect(page.locator("#audit")).to_contain_text("records verified", timeout=60_000)
    page.screenshot(path=str(shots / "flow.png"), full_page=True)


def _cli_plan(config: Path) -> dict[str, Any]:
    """`strait failover --flow A->B --dry-run --unplanned --json`, as an operator runs it."""
    command = ["failover", "--flow", "A->B", "--config", str(config), "--dry-run", "--unplanned", "--json"]
    done = subprocess.run([sys.executable, "-m", "services.cli", *command], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout))


def _moves(page: Any, table: str) -> set[tuple[str, str, int, int]]:
    """(group, topic, partition, offset) of every row of a report's group-moves table."""
    found = set()
    for row in page.locator(f"#{table} tbody tr[data-group]").all():
        cells = [cell.inner_text().strip() for cell in row.locator("td").all()]
        found.add((cells[0], cells[2], int(cells[3]), int(cells[5])))
    return found


def _committed_on_b(cockpit: Cockpit) -> dict[tuple[str, int], int]:
    admin = confluent_admin(cockpit.b.client_properties())
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)])
    result = futures[GROUP].result(timeout=30)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}


def _answer_token(page: Any, token: str | None) -> None:
    dialog = page.locator("#token-dialog")
    playwright_api.expect(dialog).to_be_visible(timeout=30_000)
    if token is None:
        page.click("#token-cancel")
    else:
        page.fill("#token-input", token)
        page.keyboard.press("Enter")


def test_the_failover_plan_equals_the_cli_and_the_failover_needs_the_token(
    cockpit: Cockpit, page: Any, shots: Path
) -> None:
    expect = playwright_api.expect
    offsets_url = f"{cockpit.url}/v1/flows/A/B/offsets"
    wait_until(
        lambda: (
            len(httpx.get(offsets_url, params={"group": GROUP}, timeout=10).json().get("offsets", []))
            == ORDERS_PARTITIONS
        ),
        120,
        f"checkpoints of {GROUP}",
    )
    cli = _cli_plan(cockpit.config)
    expected = {
        (move["group"], p["topic"], p["partition"], p["offset"])
        for move in cli["groups_moved"]
        for p in move["partitions"]
    }
    assert {row[0] for row in expected} == {GROUP}, cli

    page.goto("/ui/#/flow/A/B/dr")
    page.select_option("#failover-mode", "unplanned")
    page.click("#failover-plan-button")
    _answer_token(page, TOKEN)
    expect(page.locator("#failover-plan")).to_contain_text("nothing changed", timeout=120_000)
    assert _moves(page, "failover-plan-moves") == expected
    page.screenshot(path=str(shots / "dr-plan.png"), full_page=True)

    # Without the token: refused, and the group has not moved on the broker.
    page.click("#forget-token")
    page.click("#failover-run-button")
    page.click("#confirm-yes")
    _answer_token(page, None)
    expect(page.locator("#failover-out")).to_contain_text("refused: this action needs the translator's token")
    assert _committed_on_b(cockpit) == {}, "a refused failover moved the group"

    # With it: the group moves on the broker, and the report appears.
    page.click("#failover-run-button")
    page.click("#confirm-yes")
    _answer_token(page, TOKEN)
    expect(page.locator("#failover-report")).to_contain_text("report", timeout=180_000)
    assert _moves(page, "failover-report-moves") == expected
    committed = _committed_on_b(cockpit)
    assert {(GROUP, topic, partition, offset) for (topic, partition), offset in committed.items()} == expected
    expect(page.locator("#dr-state")).to_contain_text("failed-over", timeout=30_000)
    page.screenshot(path=str(shots / "dr-report.png"), full_page=True)


def test_the_stale_banner_appears_when_the_target_goes_away(cockpit: Cockpit, page: Any, shots: Path) -> None:
    expect = playwright_api.expect
    page.goto("/ui/")
    expect(_flow_row(page, "A->B")).to_have_count(1, timeout=30_000)
    expect(page.locator("#banner")).to_be_hidden()
    cockpit.b.nodes[0].process.stop()
    banner = page.locator("#banner")
    expect(banner).to_be_visible(timeout=60_000)
    expect(banner).to_contain_text("Stale data")
    expect(banner).to_contain_text("cluster B")
    expect(banner).not_to_contain_text("cluster A")  # A answers: B gone must not make A look lost
    expect(_flow_row(page, "A->B").locator(".badge.stale")).to_be_visible()
    page.screenshot(path=str(shots / "stale.png"), full_page=True)
