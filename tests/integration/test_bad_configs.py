"""Hostile configs, run through the real entry points: one clear line, a non-zero exit, nothing started.

Each bad config is the valid config of a flow between the session clusters A and B, with one thing made
wrong, so a service that accepted it would really start: answer on its port, log, create topics. The whole
table runs against `strait validate-config`, which reads a config exactly as the services do
(`shared.config`); a representative subset, and the settings only services read, run against the services
(each run is a fresh Python process, seconds each on a loaded machine).

Decisions, shown by `test_accepted_configs_validate`: duplicate keys are allowed and the last one wins (as
java.util.Properties reads them; the demo appends addresses to a copy of a config that way); a file that is
not UTF-8 is read as ISO-8859-1, as Java reads every properties file; `replication.factor=-1` means the
broker default (Kafka 2.4+); A->B plus B->A with DefaultReplicationPolicy is active-active, not a loop, and
so is IdentityReplicationPolicy when the two flows copy literal, disjoint topic lists.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from shared.kafka.factories import confluent_admin
from shared.localkafka import KafkaCluster
from shared.localkafka.ports import free_port
from tests.support.kafka_io import make_topic
from tests.support.mm2_config import write_mm2_config

BIN = Path(sys.executable).parent
EXIT_DEADLINE_S = 60  # a refused config exits in about the time Python takes to import the service
SERVICES = ("topic-sync", "data-mirror", "acl-sync", "checkpoint", "heartbeat", "offset-translator")
IDENTITY = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
SECRET = "hunter2-never-shown"
DROP_READ_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


@dataclass(frozen=True)
class Ctx:
    """Where a case writes its files, and the valid config text it starts from."""

    dir: Path
    base: str


Writer = Callable[[Ctx], Path]


@dataclass(frozen=True)
class Case:
    """One hostile config: how to write it, and what its one error line must say."""

    id: str
    write: Writer
    expect: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    services_only: bool = False  # settings that `validate-config` does not read
    drops_root_read: bool = False  # unreadable-file cases: root reads anything unless it drops the capability


def appended(*lines: str) -> Writer:
    """The valid config with `lines` added at the end (a later key replaces an earlier one)."""

    def write(ctx: Ctx) -> Path:
        path = ctx.dir / "bad.properties"
        path.write_text(ctx.base + "\n".join(lines) + "\n")
        return path

    return write


def raw(data: bytes | Callable[[Ctx], bytes]) -> Writer:
    """A file holding exactly `data`."""

    def write(ctx: Ctx) -> Path:
        path = ctx.dir / "bad.properties"
        path.write_bytes(data(ctx) if callable(data) else data)
        return path

    return write


def fixed(path: str) -> Writer:
    """A path that is not a file the case writes (missing, a directory, a device)."""
    return lambda ctx: Path(path.replace("{dir}", str(ctx.dir)))


def with_secret_file(content: str | None, reference: str, mode: int = 0o600) -> Writer:
    """A secrets file next to the config (a directory when `content` is None), referenced by a client key."""

    def write(ctx: Ctx) -> Path:
        secrets = ctx.dir / "secrets.properties"
        if content is None:
            secrets.mkdir()
        else:
            secrets.write_text(content)
            secrets.chmod(mode)
        lines = [
            "config.providers=file",
            "config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider",
            f"A.ssl.key.password={reference.replace('{secrets}', str(secrets))}",
        ]
        return appended(*lines)(ctx)

    return write


def _nested(depth: int) -> str:
    return "(" * depth + "x" + ")" * depth


CASES = [
    Case("tasks_max_not_a_number", appended("tasks.max=abc"), ("tasks.max='abc'", "expected an integer")),
    Case("tasks_max_10e12", appended(f"tasks.max={10**12}"), ("tasks.max='1000000000000'", "2147483647")),
    Case(
        "replication_factor_negative",
        appended("A->B.replication.factor=-2"),
        ("A->B.replication.factor='-2'", "-1 (broker default) or a number from 1 to 32767"),
    ),
    Case(
        "replication_factor_zero",
        appended("checkpoints.topic.replication.factor=0"),
        ("checkpoints.topic.replication.factor='0'",),
    ),
    Case(
        "boolean_maybe",
        appended("A->B.emit.checkpoints.enabled=maybe"),
        ("A->B.emit.checkpoints.enabled='maybe'", "expected true or false"),
    ),
    Case(
        "flow_names_unknown_alias",
        appended("A->C.enabled=true"),
        ("A->C.enabled", "unknown cluster alias 'C'", "clusters=A,B"),
    ),
    Case(
        "client_key_of_unknown_alias",
        appended("C.bootstrap.servers=localhost:1"),
        ("C.bootstrap.servers", "unknown cluster alias 'C'"),
    ),
    Case("no_clusters_key", raw(b"A.bootstrap.servers=localhost:9092\nA->B.enabled=true\n"), ("'clusters'",)),
    Case("empty_clusters", appended("clusters="), ("clusters=''", "cluster aliases")),
    Case(
        "identity_policy_cycle",
        appended("B->A.enabled=true", f"replication.policy.class={IDENTITY}"),
        ("flows A->B->A form a cycle", "A->B.topics=", "IdentityReplicationPolicy"),
    ),
    Case(
        "identity_policy_cycle_through_a_literal_topic",
        appended(
            "B->A.enabled=true",
            f"replication.policy.class={IDENTITY}",
            "A->B.topics=orders",
            "B->A.topics=ord.*",
        ),
        ("topic 'orders'", "comes back to A as 'orders'"),
    ),
    Case(
        "secret_file_missing",
        with_secret_file(None, "${file:/nonexistent/x.properties:password}"),
        ("A.ssl.key.password", "/nonexistent/x.properties", "No such file or directory"),
    ),
    Case(
        "secret_file_unreadable",
        with_secret_file(f"password={SECRET}\n", "${file:{secrets}:password}", mode=0o000),
        ("A.ssl.key.password", "secrets.properties", "Permission denied"),
        drops_root_read=True,
    ),
    Case(
        "secret_file_is_a_directory",
        with_secret_file(None, "${file:{secrets}:password}"),
        ("A.ssl.key.password", "secrets.properties", "Is a directory"),
    ),
    Case(
        "secret_key_missing_from_file",
        with_secret_file(f"passwd={SECRET}\n", "${file:{secrets}:password}"),
        ("A.ssl.key.password", "key 'password' not found"),
    ),
    Case(
        "unset_environment_variable",
        appended("A.sasl.jaas.config=${env:STRAIT_TEST_NO_SUCH_VARIABLE}"),
        ("A.sasl.jaas.config", "STRAIT_TEST_NO_SUCH_VARIABLE is not set"),
    ),
    Case("value_of_10_mb", appended("A->B.topics=" + "a" * 10_000_000), ("'A->B.topics'", "at most 1048576")),
    Case(
        "regex_nested_too_deeply",
        appended("A->B.topics=" + _nested(50_000)),
        ("A->B.topics=", "nested too deeply"),
    ),
    Case(
        "regex_repetition_too_large",
        appended("A->B.topics=a{99999999999}"),
        ("A->B.topics='a{99999999999}'", "repetition number is too large"),
    ),
    Case(
        "ten_thousand_clusters",
        appended("clusters=" + ",".join(f"C{i}" for i in range(10_000)), "bootstrap.servers=localhost:9092"),
        ("clusters=", "at most 100 cluster aliases, not 10000"),
    ),
    Case(
        "binary_garbage",
        raw(bytes(range(256)) * 64),
        ("holds binary data", "NUL byte at byte 0"),
    ),
    Case(
        "utf16_file",
        raw(lambda ctx: ctx.base.encode("utf-16")),
        ("holds binary data",),
    ),
    Case(
        "invalid_utf8_key",
        raw(lambda ctx: ctx.base.encode() + b"\xff\xfe\x80\x1b[31m=1\n"),
        ("unknown key", "\\x1b[31m"),
    ),
    Case("key_with_newline_escape", appended("foo\\nbar=1"), ("unknown key 'foo\\nbar'",)),
    Case("key_looking_like_rich_markup", appended("[/red]x=1"), ("unknown key '[/red]x'",)),
    Case("missing_file", fixed("{dir}/no-such.properties"), ("no-such.properties", "No such file or directory")),
    Case("directory_instead_of_file", fixed("{dir}"), ("Is a directory",)),
    Case("endless_device", fixed("/dev/zero"), ("/dev/zero", "larger than 16777216 bytes")),
    Case(
        "unknown_transform_class",
        appended("A->B.transforms=rewrite", "A->B.transforms.rewrite.type=com.example.SchemaIdRewriter"),
        ("A->B.transforms.rewrite.type=com.example.SchemaIdRewriter", "Strait does not implement this transform"),
    ),
    Case(
        "malformed_override",
        appended(),
        ("STRAIT_CONFIG_OVERRIDES entry 1", "expected key=value"),
        env={"STRAIT_CONFIG_OVERRIDES": "tasks.max"},
        services_only=True,
    ),
    Case(
        "flows_setting_names_unknown_alias",
        appended(),
        ("flow 'A->C'", "unknown cluster alias 'C'"),
        env={"STRAIT_FLOWS": "A->C"},
        services_only=True,
    ),
]
SUBSET = {
    "tasks_max_not_a_number",
    "identity_policy_cycle",
    "secret_file_missing",
    "flows_setting_names_unknown_alias",
    "unknown_transform_class",
}
PYTHON_TRANSFORM_NOT_IMPORTABLE = Case(
    "python_transform_not_importable",
    appended(
        "A->B.transforms=mask",
        "A->B.transforms.mask.type=strait.transforms.Python",
        "A->B.transforms.mask.function=no_such_masks:mask_email",
    ),
    ("A->B.transforms.mask.function=no_such_masks:mask_email", "cannot be imported"),
    services_only=True,
)


@dataclass
class Run:
    """What one run of an entry point did."""

    code: int | None
    stdout: str
    stderr: str
    port_answered: bool
    seconds: float


def _command(entry: str, config: Path, port: int) -> list[str]:
    if entry == "validate-config":
        return [str(BIN / "strait"), "validate-config", str(config)]
    port_flag = "--port" if entry == "offset-translator" else "--metrics-port"
    return [str(BIN / f"strait-{entry}"), "--config", str(config), port_flag, str(port)]


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("STRAIT_")}
    return {**env, "COLUMNS": "100", **extra}


def _answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def run_entry(entry: str, config: Path, *, env: dict[str, str], prefix: list[str], wait_s: float) -> Run:
    """Start the entry point, watch its port while it runs, and kill it (group) if it outlives `wait_s`."""
    port = free_port()
    began = time.monotonic()
    process = subprocess.Popen(
        [*prefix, *_command(entry, config, port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(env),
        start_new_session=True,
    )
    answered = False
    try:
        while process.poll() is None and time.monotonic() - began < wait_s:
            answered = answered or (entry != "validate-config" and _answers(port))
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate(timeout=30)
    code = process.returncode if process.returncode >= 0 else None
    return Run(code, out.decode(errors="replace"), err.decode(errors="replace"), answered, time.monotonic() - began)


def _topics(*clusters: KafkaCluster) -> set[str]:
    names: set[str] = set()
    for cluster in clusters:
        metadata = confluent_admin(cluster.client_properties()).list_topics(timeout=30)
        names |= {f"{cluster.name}:{topic}" for topic in metadata.topics}
    return names


def _ctx(tmp_path: Path, a: KafkaCluster, b: KafkaCluster, unique: str) -> Ctx:
    """The valid config: A->B copies this test's topics; heartbeats and checkpoints on."""
    path = write_mm2_config(tmp_path / "valid.properties", {"A": a, "B": b}, {"A->B": {"topics": f"bc-{unique}-.*"}})
    return Ctx(tmp_path, path.read_text())


def _prefix(case: Case) -> list[str]:
    if not case.drops_root_read or os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a file without read permission is readable")
    return DROP_READ_OVERRIDE


def _assert_refused(entry: str, case: Case, tmp_path: Path, a: KafkaCluster, b: KafkaCluster, unique: str) -> None:
    ctx = _ctx(tmp_path, a, b, unique)
    config = case.write(ctx)
    before = _topics(a, b)
    run = run_entry(entry, config, env=case.env, prefix=_prefix(case), wait_s=EXIT_DEADLINE_S)
    after = _topics(a, b)

    assert run.code is not None, f"{entry} still ran after {EXIT_DEADLINE_S}s: it accepted the config\n{run.stderr}"
    assert run.code == 2, f"{entry} exited {run.code}\n{run.stderr[-3000:]}"
    lines = run.stderr.splitlines()
    assert len(lines) == 1, f"{entry}: expected one line on stderr, got {len(lines)}:\n{run.stderr[-3000:]}"
    line = lines[0]
    print(f"\n{entry} [{case.id}] {run.seconds:.1f}s: {line[:300]}")
    assert line.startswith("invalid " if entry == "validate-config" else f"strait-{entry}: error: "), line
    for fragment in case.expect:
        assert fragment in line, f"{fragment!r} not in {line[:2000]!r}"
    assert len(line) < 2000, "the line shortens long values"
    assert SECRET not in run.stderr + run.stdout
    assert run.stdout == "", f"{entry} wrote to stdout (a log line means it got further): {run.stdout[:500]}"
    assert not run.port_answered, f"{entry} opened its port"
    assert after == before, f"{entry} created topics: {sorted(after - before)}"


@pytest.mark.parametrize("case", [c for c in CASES if not c.services_only], ids=lambda c: c.id)
def test_validate_config_refuses(
    case: Case, cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    _assert_refused("validate-config", case, tmp_path, cluster_a, cluster_b, unique)


SERVICE_CASES = [
    pytest.param(service, case, id=f"{service}-{case.id}")
    for service in SERVICES
    for case in CASES
    if case.id in SUBSET or (case.services_only and service == "topic-sync")
]


@pytest.mark.parametrize(("service", "case"), SERVICE_CASES)
def test_service_refuses_and_starts_nothing(
    service: str, case: Case, cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    _assert_refused(service, case, tmp_path, cluster_a, cluster_b, unique)


def test_data_mirror_refuses_a_python_transform_it_cannot_import(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """Only data-mirror runs transforms, so only it imports them: before it starts anything."""
    _assert_refused("data-mirror", PYTHON_TRANSFORM_NOT_IMPORTABLE, tmp_path, cluster_a, cluster_b, unique)


def test_the_valid_config_does_start_the_service(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    """The checks above can fail: the config the cases spoil starts topic-sync, which answers on its port,
    logs, and creates the remote topic of the flow, then stops cleanly on SIGTERM."""
    _ctx(tmp_path, cluster_a, cluster_b, unique)
    make_topic(cluster_a.client_properties(), f"bc-{unique}-orders")
    port = free_port()
    process = subprocess.Popen(
        _command("topic-sync", tmp_path / "valid.properties", port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=_env({}),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (_answers(port) and f"B:A.bc-{unique}-orders" in _topics(cluster_b)):
            assert process.poll() is None, f"topic-sync exited {process.returncode}"
            assert time.monotonic() < deadline, "topic-sync did not start and sync within 120 s"
            time.sleep(0.5)
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=30)
    assert process.returncode == 0, out.decode(errors="replace")[-2000:]
    assert b'"service_started"' in out


ACCEPTED = [
    pytest.param(("B->A.enabled=true",), {"A->B", "B->A"}, id="active_active_default_policy"),
    pytest.param(
        (
            "B->A.enabled=true",
            f"replication.policy.class={IDENTITY}",
            "A->B.topics=orders,orders-v2,pay[.]v1",
            "B->A.topics=payments",
        ),
        {"A->B", "B->A"},
        id="active_active_identity_disjoint_literal_topics",
    ),
    pytest.param(
        (f"A->B.replication.policy.class={IDENTITY}", "B->A.enabled=true", "A->B.topics=orders"),
        {"A->B", "B->A"},
        id="identity_one_way_topic_comes_back_prefixed",
    ),
    pytest.param(("A->B.topics=bad(", "A->B.topics=orders"), {"A->B"}, id="duplicate_key_last_wins"),
    pytest.param(("replication.factor=-1",), {"A->B"}, id="replication_factor_broker_default"),
]


def _validated(path: Path) -> dict[str, Any]:
    """`strait validate-config --json` of an accepted config: its summary."""
    result = subprocess.run(
        [str(BIN / "strait"), "validate-config", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_env({}),
    )
    assert result.returncode == 0, result.stderr
    summary: dict[str, Any] = json.loads(result.stdout)
    return summary


@pytest.mark.parametrize(("extra", "enabled"), ACCEPTED)
def test_accepted_configs_validate(
    extra: tuple[str, ...],
    enabled: set[str],
    cluster_a: KafkaCluster,
    cluster_b: KafkaCluster,
    unique: str,
    tmp_path: Path,
) -> None:
    ctx = _ctx(tmp_path, cluster_a, cluster_b, unique)
    path = appended(*extra)(ctx)
    summary = _validated(path)
    assert {flow["flow"] for flow in summary["flows"] if flow["enabled"]} == enabled
    if "A->B.topics=orders" in extra:
        assert next(f for f in summary["flows"] if f["flow"] == "A->B")["topics"] == ["orders"]


def test_a_file_that_is_not_utf8_is_read_as_iso_8859_1(
    cluster_a: KafkaCluster, cluster_b: KafkaCluster, unique: str, tmp_path: Path
) -> None:
    ctx = _ctx(tmp_path, cluster_a, cluster_b, unique)
    path = raw(ctx.base.encode() + b"A->B.topics=caf\xe9\n")(ctx)
    flows = _validated(path)["flows"]
    assert next(f for f in flows if f["flow"] == "A->B")["topics"] == ["caf\u00e9"]
