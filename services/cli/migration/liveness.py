"""Is the tool that should be stopped still running? Asked three ways, each answer naming what it saw.

- MM2 (dedicated mode) keeps a Connect worker group on the target: a group with live members means it runs.
- Strait's data-mirror publishes a status per flow: a recent one that is not "stopped" means it runs.
- Either tool commits positions while it copies: a position that moves while we watch means it runs (this
  also catches an MM2 run as a Connect cluster under another group name, or a data-mirror that lost its status).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from shared.config import FlowConfig
from shared.control import read_statuses
from shared.control.events import now_ms
from shared.flow_status import STALE_AFTER_S_DEFAULT
from shared.kafka.group_describe import describe_any_group

Positions = Mapping[tuple[str, int], int]


def mm2_running(flow: FlowConfig, group: str, *, timeout_s: float) -> str | None:
    """Why MM2 looks alive on the flow's target, or None."""
    membership = describe_any_group(flow.target_admin_props(), group, cluster=flow.target, timeout_s=timeout_s)
    if membership.active:
        return (
            f"MM2 is still running: its worker group {group} on cluster {flow.target} has "
            f"{membership.members} live member(s) (state {membership.state}); stop MM2 first"
        )
    return None


def strait_running(flow: FlowConfig, *, timeout_s: float) -> str | None:
    """Why Strait's data-mirror looks alive for the flow, or None."""
    now = now_ms()
    for status in read_statuses(flow.target_consumer_props(), timeout_s=timeout_s).values():
        if status.service != "data-mirror" or status.flow != flow.name or status.state == "stopped":
            continue
        age_s = (now - status.ts) / 1000
        if age_s < STALE_AFTER_S_DEFAULT:
            return (
                f"Strait's data-mirror is still running for {flow.name}: instance {status.instance} reported "
                f"'{status.state}' {age_s:.0f}s ago; stop it first (a killed one counts as stopped "
                f"{STALE_AFTER_S_DEFAULT:.0f}s after its last status)"
            )
    return None


def moved_while_watching(tool: str, read: Callable[[], Positions], before: Positions, settle_s: float) -> str | None:
    """Read the positions again `settle_s` after `before`; why the tool is still committing, or None."""
    if settle_s <= 0:
        return None
    time.sleep(settle_s)
    after = read()
    moved = sorted(where for where in set(before) | set(after) if before.get(where) != after.get(where))
    if not moved:
        return None
    topic, partition = moved[0]
    return (
        f"{tool} is still copying: its position for {topic}-{partition} moved from {before.get(moved[0])} to "
        f"{after.get(moved[0])} within {settle_s:g}s ({len(moved)} partition(s) moved); stop it first"
    )
