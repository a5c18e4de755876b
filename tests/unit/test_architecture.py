"""The code's own rules (ARCHITECTURE.md), checked on the source: no import cycles, clients only where allowed."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("services", "shared")
CLIENT_LIBRARIES = ("confluent_kafka", "aiokafka")
# Where Kafka client types may be imported: shared/kafka builds and calls the clients; data-mirror's copy
# loop calls them directly on its hot path; the local Kafka harness starts brokers.
CLIENTS_ALLOWED = ("shared/kafka/", "shared/localkafka/")
COPY_LOOP = (
    "services/data_mirror/record_copy.py",
    "services/data_mirror/task_loop.py",
    "services/data_mirror/partition_copy.py",
    "services/data_mirror/task_clients.py",
)
# Where Kafka clients may be built (shared/kafka/factories.py imported): shared/kafka, the copy loop, and the
# demo's traffic generator, which is a client program by design (it produces and checks the demo's records).
BUILDERS_ALLOWED = (*COPY_LOOP, "services/cli/demo_traffic.py")
FACTORIES = "shared.kafka.factories"


def _modules() -> Iterator[tuple[str, str, ast.Module]]:
    """(path relative to the root, dotted module name, parsed source) of every module in the packages."""
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            dotted = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            yield relative, dotted, ast.parse(path.read_text(), relative)


def _imports(tree: ast.Module, dotted: str, is_package: bool) -> set[str]:
    """Modules imported at module level or in functions (TYPE_CHECKING blocks included: they still couple)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = dotted.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_kafka_client_libraries_are_imported_only_where_allowed() -> None:
    offenders = []
    for relative, dotted, tree in _modules():
        if relative.startswith(CLIENTS_ALLOWED) or relative in COPY_LOOP:
            continue
        uses = {m for m in _imports(tree, dotted, relative.endswith("__init__.py")) if m.startswith(CLIENT_LIBRARIES)}
        if uses:
            offenders.append(f"{relative}: {sorted(uses)}")
    assert not offenders, "build and call Kafka clients in shared/kafka instead:\n" + "\n".join(offenders)


def test_kafka_clients_are_built_only_where_allowed() -> None:
    offenders = []
    for relative, dotted, tree in _modules():
        if relative.startswith(CLIENTS_ALLOWED) or relative in BUILDERS_ALLOWED:
            continue
        if any(m == FACTORIES or m.startswith(f"{FACTORIES}.") for m in _imports(tree, dotted, False)):
            offenders.append(relative)
    assert not offenders, "build Kafka clients inside shared/kafka (a class there owns its client):\n" + "\n".join(
        offenders
    )


def test_no_import_cycles_between_modules() -> None:
    modules = {dotted: (relative, tree) for relative, dotted, tree in _modules()}
    graph: dict[str, set[str]] = {}
    for dotted, (relative, tree) in modules.items():
        imported = _imports(tree, dotted, relative.endswith("__init__.py"))
        # `from pkg import name` may name a module or an attribute: keep what is a module of ours.
        graph[dotted] = {m for m in imported if m in modules and m != dotted and not dotted.startswith(f"{m}.")}
        graph[dotted] -= {m for m in graph[dotted] if m.startswith(f"{dotted}.")}  # a package importing its own parts
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in cycles)


def test_one_rule_says_which_flows_a_process_serves() -> None:
    """Every service and command selects its flows through shared/flow_selection.py (four versions had drifted)."""
    defining = [
        path
        for path, _dotted, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and "flows" in node.name and node.name.startswith(("selected", "chosen"))
    ]
    assert defining == ["shared/flow_selection.py"]


SERVICE_PACKAGES = sorted(
    p.parent.name for p in (ROOT / "services").glob("*/__main__.py") if p.parent.name != "cli"
)  # the CLI is a command, not a service: its demo stops the processes it started on Ctrl-C itself


def _calls(tree: ast.Module) -> Iterator[str]:
    """The dotted name of every call in a module (`signal.signal`, `loop.add_signal_handler`, `run_service`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            parts: list[str] = []
            func: ast.expr = node.func
            while isinstance(func, ast.Attribute):
                parts.append(func.attr)
                func = func.value
            if isinstance(func, ast.Name):
                parts.append(func.id)
            yield ".".join(reversed(parts))


def test_only_the_runner_handles_signals() -> None:
    """SIGTERM means the same in every service because one place turns it into a stop request."""
    handlers = sorted(
        relative
        for relative, _dotted, tree in _modules()
        if not relative.startswith(("services/cli/", "shared/localkafka/"))
        for call in _calls(tree)
        if call.endswith(("add_signal_handler", "signal.signal"))
    )
    assert handlers == ["shared/runner.py"]


def test_every_service_runs_under_the_one_runner() -> None:
    """Each service's entry point hands its service to `run_service`: settings, logging, metrics, exit codes."""
    assert len(SERVICE_PACKAGES) == 7, SERVICE_PACKAGES  # the six of the design card and the audit
    for package in SERVICE_PACKAGES:
        tree = ast.parse((ROOT / "services" / package / "__main__.py").read_text())
        calls = set(_calls(tree))
        assert "run_service" in calls, package
        assert not {"asyncio.run", "uvicorn.run"} & calls, package


def test_one_status_publisher_builds_every_status() -> None:
    """Every status record is built by shared/control/status_reporter.py: one key rule, one best-effort rule."""
    builders = sorted(
        relative
        for relative, _dotted, tree in _modules()
        for call in _calls(tree)
        if call.split(".")[-1] == "ServiceStatus"
    )
    assert builders == ["shared/control/status_reporter.py"]


def test_one_module_reads_partitions_to_their_end() -> None:
    """`read_range` is the one loop that reads up to an end offset; the one-shot reads built on it live beside it."""
    readers = sorted(
        (relative, node.name)
        for relative, _dotted, tree in _modules()
        for node in tree.body  # module-level functions (OffsetSyncStore.read_to_end is a flag, not a read)
        if isinstance(node, ast.FunctionDef)
        and node.name in ("read_range", "read_to_end", "read_all_partitions", "last_record", "read_partition")
    )
    assert {relative for relative, _ in readers} == {"shared/kafka/partition_reader.py"}, readers


def test_a_flows_names_places_lease_and_publisher_come_from_its_flow_context() -> None:
    """Services take a flow's topic rule, where its offset syncs and progress live, its lease and its control
    publisher from shared/flow_context.py: the lease group, the places and the replication factor of Strait's own
    topics had been derived in each service (heartbeat's publisher took another topic's replication factor)."""
    builders = sorted(
        (relative, call)
        for relative, _dotted, tree in _modules()
        for call in _calls(tree)
        if call in ("FlowTopics.for_flow", "offset_syncs_place", "progress_topic", "ShardLease", "ControlPublisher")
    )
    assert {relative for relative, _ in builders} == {"shared/flow_context.py"}, builders


# -- the record path: one home for each decision (issue 53) ------------------------------------------------------
COPIERS = (
    "services/data_mirror/task_loop.py",
    "services/data_mirror/record_copy.py",
    "services/data_mirror/batch_copy.py",
    "services/data_mirror/partition_copy.py",
)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def test_one_module_decides_where_a_partition_resumes() -> None:
    """`resume.py` alone turns auto.offset.reset into an offset and tells a topic made again: the rule
    `high if reset_to_latest else low` was written out four times, `_made_again` twice."""
    choices = sorted(
        (relative, node.lineno)
        for relative, _dotted, tree in _modules()
        if relative != "services/data_mirror/resume.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.IfExp) and _names(node.test) & {"to_latest", "reset_to_latest"}
    )
    assert choices == [], choices
    made_again = sorted(
        relative
        for relative, _dotted, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") == "made_again"
    )
    assert made_again == ["services/data_mirror/resume.py"]
    users = {
        relative
        for relative, dotted, tree in _modules()
        if "services.data_mirror.resume" in _imports(tree, dotted, False)
    }
    assert set(COPIERS) <= users, set(COPIERS) - users


def test_one_table_says_what_a_kafka_error_is_about() -> None:
    """The copy path classifies errors through shared/kafka/error_classes.py only: none of its modules asks a
    client error whether it is retriable or fatal, or looks a code up in aiokafka's own table."""
    copy_path = (
        *COPIERS,
        "services/data_mirror/task_clients.py",
        "shared/kafka/batch_producer.py",
        "shared/kafka/batch_fetcher.py",
        "shared/kafka/errors.py",
    )
    asked = sorted(
        (relative, call)
        for relative, _dotted, tree in _modules()
        if relative in copy_path
        for call in _calls(tree)
        if call.split(".")[-1] in ("fatal", "for_code")
        or (call.endswith(".retriable") and relative != "shared/kafka/errors.py")
    )
    assert asked == [], asked
    users = {
        relative
        for relative, dotted, tree in _modules()
        if "shared.kafka.error_classes" in _imports(tree, dotted, False)
    }
    missing = set(copy_path) - users - {"services/data_mirror/task_loop.py", "shared/kafka/batch_fetcher.py"}
    assert missing == set(), missing


def test_one_module_decides_whether_a_batch_goes_as_it_is() -> None:
    """Forward, merge or re-encode is services/data_mirror/forwarding.py's: the batch copier's send and merge
    tests repeated the same conditions."""
    callers = sorted(
        relative
        for relative, _dotted, tree in _modules()
        for call in _calls(tree)
        if call.split(".")[-1] == "why_not_forwardable"
    )
    assert callers == ["services/data_mirror/forwarding.py"], callers


# Whose private members tests leave alone, and which tests: the copy task's behaviour is reached through the
# copiers' and the loop's public methods, the task loop itself and the pure decisions (STYLE.md, "One decision,
# one home"); a test driving private methods broke with every refactoring and checked steps, not outcomes.
ENCAPSULATED = {
    "services/data_mirror/batch_copy.py": "BatchCopier",
    "services/data_mirror/record_copy.py": "RecordCopier",
    "services/data_mirror/task_loop.py": "TaskLoop",
    "shared/kafka/batch_producer.py": "BatchProducer",
}
OUTCOME_TESTS = ("tests/unit/services/data_mirror", "tests/unit/shared/kafka")


def _private_members(tree: ast.Module, name: str) -> set[str]:
    """The underscore names class `name` defines: its methods and properties, and the attributes it sets on self."""
    found: set[str] = set()
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name):
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                found.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
                found.add(node.attr)
    return {member for member in found if member.startswith("_") and not member.startswith("__")}


def test_tests_reach_the_copiers_the_task_loop_and_the_batch_producer_through_public_members_only() -> None:
    """No test under tests/unit/services/data_mirror or tests/unit/shared/kafka uses a private member of
    BatchCopier, RecordCopier, TaskLoop or BatchProducer (a fake's own `self._x` is its business)."""
    private: set[str] = set()
    for relative, name in ENCAPSULATED.items():
        private |= _private_members(ast.parse((ROOT / relative).read_text(), relative), name)
    assert {"_take_landed", "_advance_idle_positions", "_link"} <= private, "the scan finds the members"
    used = sorted(
        (path.relative_to(ROOT).as_posix(), node.lineno, node.attr)
        for folder in OUTCOME_TESTS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and not (isinstance(node.value, ast.Name) and node.value.id == "self")
    )
    where = [f"{path}:{line}: {member}" for path, line, member in used]
    assert where == [], "reach the behaviour through public methods, the task loop or a pure decision:\n" + "\n".join(
        where
    )


def test_one_implementation_applies_a_flows_transforms_and_provenance() -> None:
    """What a flow makes of a record is shared/reshape's: data-mirror's two copiers apply it, and `strait verify` and
    the audit compare the target with what it makes of the source (a second reading of the chain in the verifier
    would prove a copy against the verifier's own idea of it)."""
    chains = sorted(
        relative
        for relative, _dotted, tree in _modules()
        if not relative.startswith("shared/reshape/")
        for call in _calls(tree)
        if call.split(".")[-1] in ("TransformChain", "apply_batch", "for_topic", "chain_effect")
    )
    assert chains == [], chains
    users = {
        relative
        for relative, dotted, tree in _modules()
        if "shared.reshape.reshaper.Reshaper" in _imports(tree, dotted, False)
    }
    assert {"services/data_mirror/work.py", "shared/verify/expected.py"} <= users, users
