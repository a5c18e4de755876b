"""The hand-over plan: what is written, and each reason to refuse, named per partition."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from services.cli.migration.plan import PartitionState, plan_flow, plan_partition
from services.cli.migration.positions import FlowPositions


def state(handing: int | None, taking: int | None = None, start: int = 0, end: int = 100) -> PartitionState:
    return PartitionState("orders", 2, start, end, handing, taking)


def test_a_position_inside_the_source_log_is_written() -> None:
    plan = plan_partition(state(40), "from-mm2")
    assert (plan.action, plan.problem) == ("write", None)
    assert plan_partition(state(100), "from-mm2").problem is None  # caught up: the next record is the end


def test_a_position_already_held_by_the_tool_taking_over_is_left_unchanged() -> None:
    assert plan_partition(state(40, taking=40), "to-mm2").action == "unchanged"


def test_a_partition_the_stopping_tool_never_copied_is_reported_not_written() -> None:
    plan = plan_partition(state(None), "from-mm2")
    assert (plan.action, plan.problem) == ("not copied", None)


def test_a_position_ahead_of_the_source_end_is_refused() -> None:
    problem = plan_partition(state(150), "from-mm2").problem
    assert problem is not None
    assert "orders-2: MM2's position 150 is ahead of the source's end offset 100" in problem


def test_a_position_behind_the_source_start_says_what_was_lost() -> None:
    problem = plan_partition(state(10, start=25), "to-mm2").problem
    assert problem is not None
    assert "Strait's position 10 is behind the source's first offset 25: 15 records (10..24)" in problem


def test_a_takeover_that_would_copy_again_is_refused() -> None:
    problem = plan_partition(state(40, taking=55), "from-mm2").problem
    assert problem is not None
    assert "Strait already holds position 55, past MM2's 40: handing over would copy 15 records again" in problem


def test_a_flow_without_any_position_is_refused_as_a_whole() -> None:
    plan = plan_flow("A->B", "from-mm2", [state(None), PartitionState("orders", 0, 0, 5, None, None)], [])
    assert plan.problems == ["A->B: MM2 holds no position for any of the flow's 2 partitions"]
    assert plan.to_write == []


def test_flow_wide_refusals_come_first_and_partitions_are_in_order() -> None:
    states = [PartitionState("orders", 1, 0, 9, 3, None), PartitionState("orders", 0, 0, 9, 99, None)]
    plan = plan_flow("A->B", "from-mm2", states, ["MM2 is still running"])
    assert [p.state.partition for p in plan.partitions] == [0, 1]
    assert plan.problems[0] == "MM2 is still running"
    assert "orders-0" in plan.problems[1]


def test_positions_put_the_stopping_tool_first() -> None:
    positions = FlowPositions(
        mm2={("orders", 0): 7}, strait={("orders", 0): 5}, watermarks={("orders", 0): (0, 9)}, mm2_offsets_topic="t"
    )
    assert positions.states("from-mm2") == [PartitionState("orders", 0, 0, 9, 7, 5)]
    assert positions.states("to-mm2") == [PartitionState("orders", 0, 0, 9, 5, 7)]


def test_a_bad_config_or_flow_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text("clusters=A,B\nA.bootstrap.servers=127.0.0.1:1\nB.bootstrap.servers=127.0.0.1:2\n")
    for args, expected in (
        (["--config", str(tmp_path / "missing.properties")], "missing.properties"),
        (["--config", str(config)], "no enabled flow in the config"),
        (["--config", str(config), "--flows", "A->C"], "'C'"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "services.cli", "migrate", "from-mm2", *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        assert expected in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
