"""One hand-over, flow by flow: read both tools' positions, check the stopping tool has stopped, plan, write.

Nothing is written for any flow unless every flow's plan is free of problems: a refusal changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.cli.migration.apply import write_mm2_positions, write_strait_progress
from services.cli.migration.liveness import mm2_running, moved_while_watching, strait_running
from services.cli.migration.plan import Direction, FlowPlan, plan_flow
from services.cli.migration.positions import FlowPositions, mm2_positions, read_positions, strait_positions
from shared.config import FlowConfig
from shared.replication_policy import mm2_worker_group


@dataclass(frozen=True)
class MigrationOptions:
    """What the command line chose."""

    direction: Direction
    dry_run: bool = False
    settle_s: float = 3.0
    mm2_group: str | None = None  # default: dedicated mode's `<source>-mm2`
    mm2_offsets_topic: str | None = None  # default: dedicated mode's `mm2-offsets.<source>.internal`
    timeout_s: float = 30.0


@dataclass(frozen=True)
class FlowOutcome:
    """A flow's plan and how many positions were written for it."""

    plan: FlowPlan
    positions: FlowPositions
    written: int = 0


def _still_running(flow: FlowConfig, positions: FlowPositions, options: MigrationOptions) -> list[str]:
    timeout_s = options.timeout_s
    if options.direction == "from-mm2":
        group = options.mm2_group or mm2_worker_group(flow.source)
        running = mm2_running(flow, group, timeout_s=timeout_s)
        if running is None:
            running = moved_while_watching(
                "MM2",
                lambda: mm2_positions(flow, positions.mm2_offsets_topic, timeout_s=timeout_s),
                positions.mm2,
                options.settle_s,
            )
    else:
        running = strait_running(flow, timeout_s=timeout_s)
        if running is None:
            running = moved_while_watching(
                "Strait's data-mirror",
                lambda: strait_positions(flow, timeout_s=timeout_s),
                positions.strait,
                options.settle_s,
            )
    return [running] if running else []


def plan_migration(flows: list[FlowConfig], options: MigrationOptions) -> list[FlowOutcome]:
    """Every flow's plan, with every reason to refuse it; writes nothing."""
    outcomes = []
    for flow in flows:
        positions = read_positions(flow, offsets_topic=options.mm2_offsets_topic, timeout_s=options.timeout_s)
        refusals = _still_running(flow, positions, options)
        plan = plan_flow(flow.name, options.direction, positions.states(options.direction), refusals)
        outcomes.append(FlowOutcome(plan, positions))
    return outcomes


def migrate(flows: list[FlowConfig], options: MigrationOptions) -> list[FlowOutcome]:
    """Plan every flow; unless a plan has problems or this is a dry run, write the positions."""
    outcomes = plan_migration(flows, options)
    if options.dry_run or any(outcome.plan.problems for outcome in outcomes):
        return outcomes
    written = []
    for flow, outcome in zip(flows, outcomes, strict=True):
        if options.direction == "from-mm2":
            count = write_strait_progress(flow, outcome.plan, timeout_s=options.timeout_s)
        else:
            topic = outcome.positions.mm2_offsets_topic
            count = write_mm2_positions(flow, outcome.plan, topic, timeout_s=options.timeout_s)
        written.append(FlowOutcome(outcome.plan, outcome.positions, count))
    return written


def outcome_as_json(outcome: FlowOutcome) -> dict[str, Any]:
    """A flow's plan as plain data: positions are next offsets to copy."""
    plan = outcome.plan
    mm2_first = plan.direction == "from-mm2"
    return {
        "flow": plan.flow,
        "direction": plan.direction,
        "refused": bool(plan.problems),
        "problems": plan.problems,
        "written": outcome.written,
        "mm2_offsets_topic": outcome.positions.mm2_offsets_topic,
        "partitions": [
            {
                "topic": row.state.topic,
                "partition": row.state.partition,
                "source_log_start": row.state.log_start,
                "source_log_end": row.state.log_end,
                "mm2_next_offset": row.state.handing_over if mm2_first else row.state.taking_over,
                "strait_next_offset": row.state.taking_over if mm2_first else row.state.handing_over,
                "action": row.action,
                "problem": row.problem,
            }
            for row in plan.partitions
        ],
    }
