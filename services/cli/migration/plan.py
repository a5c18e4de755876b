"""The per-partition plan of a hand-over between MM2 and Strait, and every reason to refuse it (pure logic).

A position is always "the next source offset to copy". MM2 stores the last offset it copied (next - 1), Strait
its next offset; `positions.py` reads both into this one meaning, so the plan compares like with like.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Direction = Literal["from-mm2", "to-mm2"]
Action = Literal["write", "unchanged", "not copied"]
TOOL_NAMES = {"from-mm2": ("MM2", "Strait"), "to-mm2": ("Strait", "MM2")}


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What both tools and the source say about one source partition."""

    topic: str
    partition: int
    log_start: int
    log_end: int
    handing_over: int | None  # next offset per the tool that stops (None: it never copied this partition)
    taking_over: int | None  # next offset per the tool that starts, before the hand-over


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """One partition's outcome: what is written, or why the hand-over is refused."""

    state: PartitionState
    action: Action
    problem: str | None = None


@dataclass(frozen=True)
class FlowPlan:
    """Every partition of one flow, and whether the hand-over may go ahead."""

    flow: str
    direction: Direction
    partitions: list[PartitionPlan]
    refusals: list[str] = field(default_factory=list)  # flow-wide reasons (a tool still running, no positions)

    @property
    def problems(self) -> list[str]:
        """Every reason to refuse, flow-wide first."""
        return [*self.refusals, *(p.problem for p in self.partitions if p.problem)]

    @property
    def to_write(self) -> list[PartitionPlan]:
        """The partitions whose position is written."""
        return [p for p in self.partitions if p.action == "write"]


def plan_partition(state: PartitionState, direction: Direction) -> PartitionPlan:
    """Write the stopping tool's position unless it is missing, or outside the source's log, or would copy again."""
    old, new = TOOL_NAMES[direction]
    where = f"{state.topic}-{state.partition}"
    position = state.handing_over
    if position is None:
        return PartitionPlan(state, "not copied")
    if position > state.log_end:
        problem = (
            f"{where}: {old}'s position {position} is ahead of the source's end offset {state.log_end} "
            "(a different or recreated source topic?)"
        )
        return PartitionPlan(state, "write", problem)
    if position < state.log_start:
        lost = state.log_start - position
        problem = (
            f"{where}: {old}'s position {position} is behind the source's first offset {state.log_start}: "
            f"{lost} records ({position}..{state.log_start - 1}) were deleted by retention before {old} copied them"
        )
        return PartitionPlan(state, "write", problem)
    if state.taking_over is not None and state.taking_over > position:
        again = state.taking_over - position
        problem = (
            f"{where}: {new} already holds position {state.taking_over}, past {old}'s {position}: "
            f"handing over would copy {again} records again"
        )
        return PartitionPlan(state, "write", problem)
    if state.taking_over == position:
        return PartitionPlan(state, "unchanged")
    return PartitionPlan(state, "write")


def plan_flow(flow: str, direction: Direction, states: list[PartitionState], refusals: list[str]) -> FlowPlan:
    """The plan of every partition; refused as a whole if the stopping tool holds no position at all."""
    partitions = [plan_partition(state, direction) for state in sorted(states, key=lambda s: (s.topic, s.partition))]
    reasons = list(refusals)
    if states and all(p.action == "not copied" for p in partitions):
        old, _ = TOOL_NAMES[direction]
        reasons.append(f"{flow}: {old} holds no position for any of the flow's {len(states)} partitions")
    return FlowPlan(flow, direction, partitions, reasons)
