"""Control-topic events: every one carries `type`, `version`, `flow` and `ts` (epoch ms).

A reader skips types it does not know and versions newer than it understands, so services of different
releases can share one control topic during a rolling upgrade.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds."""
    return int(time.time() * 1000)


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")
    CURRENT_VERSION: ClassVar[int] = 1

    version: int = 1
    flow: str = Field(description="the flow as 'source->target'; empty for events about a whole instance")
    ts: int = Field(default_factory=now_ms)


class RemoteTopic(BaseModel):
    """One replicated topic: its source name, its remote name on the target and its partition count."""

    model_config = ConfigDict(frozen=True)

    source_topic: str
    remote_topic: str
    partitions: int = Field(ge=1)


class TopicsChanged(_Event):
    """topic-sync's full list of remote topics that exist and are ready to receive records."""

    type: Literal["topics-changed"] = "topics-changed"
    topics: tuple[RemoteTopic, ...]


class ConfigChanged(_Event):
    """Settings that take effect without a restart (topic filter, intervals)."""

    type: Literal["config-changed"] = "config-changed"
    settings: dict[str, str]


class FlowPaused(_Event):
    """A flow stops moving records until resumed; `reason` says why."""

    type: Literal["flow-paused"] = "flow-paused"
    reason: str


class FlowResumed(_Event):
    """A paused flow moves records again."""

    type: Literal["flow-resumed"] = "flow-resumed"


class MirrorHandover(_Event):
    """data-mirror's driver asks running copy tasks to commit and return: their partitions move, or it stops.

    `tasks` lists [slot, generation] pairs, so a task started later for the same slot is never stopped by it.
    """

    type: Literal["mirror-handover"] = "mirror-handover"
    tasks: tuple[tuple[int, int], ...]

    def names(self, slot: int, generation: int) -> bool:
        """True if the task of `slot` started as `generation` is asked to hand over."""
        return (slot, generation) in self.tasks


class ServiceStatus(_Event):
    """The latest status of one service instance (keyed by instance on the compacted status topic)."""

    type: Literal["status"] = "status"
    service: str
    instance: str
    state: Literal["starting", "running", "paused", "degraded", "stopped", "failed"]
    release: str = ""
    started_ts: int = 0
    last_error: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


ControlEvent = Annotated[
    TopicsChanged | ConfigChanged | FlowPaused | FlowResumed | MirrorHandover | ServiceStatus,
    Field(discriminator="type"),
]
EVENT_TYPES: dict[str, type[_Event]] = {
    "topics-changed": TopicsChanged,
    "config-changed": ConfigChanged,
    "flow-paused": FlowPaused,
    "flow-resumed": FlowResumed,
    "mirror-handover": MirrorHandover,
    "status": ServiceStatus,
}
