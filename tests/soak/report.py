"""The soak's outcome: counts, verdict, a printed summary and the markdown result file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from shared.partition_key import PartitionKey
from tests.soak.clusters import GROUP
from tests.soak.compare import ResumePoint, TopicComparison
from tests.soak.events import Event, EventLog
from tests.soak.options import SoakOptions


@dataclass
class SoakResult:
    """Everything a soak run measured; filled in as the run goes."""

    options: SoakOptions
    started_at: datetime
    traffic_s: float = 0.0
    total_s: float = 0.0
    sent: int = 0
    acked: int = 0
    failed: int = 0
    failure_kinds: Counter[str] = field(default_factory=Counter)
    unacknowledged: int = 0
    producer_clients: int = 1
    consumed: int = 0
    caught_up: bool = False
    catchup_s: float = 0.0
    topics: list[TopicComparison] = field(default_factory=list)
    committed: dict[PartitionKey, int] = field(default_factory=dict)
    points: dict[PartitionKey, ResumePoint] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    kills: Counter[str] = field(default_factory=Counter)
    exits: Counter[str] = field(default_factory=Counter)
    error_lines: Counter[str] = field(default_factory=Counter)
    stop_codes: dict[str, int | None] = field(default_factory=dict)
    services: list[str] = field(default_factory=list)
    audit: dict[str, object] = field(default_factory=dict)  # the audit's own counts at the end (its last instance)
    aborted: str | None = None
    log_dir: Path | None = None

    @property
    def lost(self) -> int:
        """Records in a source topic that never reached the target, or arrived altered (the verifier's count; the
        value check's when it finds more)."""
        return sum(t.lost for t in self.topics)

    @property
    def duplicates(self) -> int:
        """Extra copies on the target."""
        return sum(t.report.duplicates for t in self.topics)

    def resume_problems(self) -> list[str]:
        """Why failing the group over to B through the translator would not be safe (empty: it would be)."""
        problems: list[str] = []
        if not self.committed:
            problems.append("the consumer group committed nothing")
        late = sorted(k for k, off in self.committed.items() if k not in self.points or self.points[k].upstream != off)
        if late:
            problems.append(f"{len(late)} partition(s) without a checkpoint of the last commit, e.g. {late[0]}")
        checks = [c for t in self.topics for c in t.resume.values()]
        if missing := sum(c.missing for c in checks):
            problems.append(f"{missing} record(s) after the committed offsets are not after the translated ones")
        if past := sum(1 for c in checks if c.past_end):
            problems.append(f"{past} translated offset(s) beyond the target's end")
        return problems

    @property
    def passed(self) -> bool:
        """Run completed, mirror caught up in time, nothing lost, failover offsets safe."""
        done = self.aborted is None and self.topics != [] and self.caught_up
        return done and self.lost == 0 and not self.audit_losses() and not self.resume_problems()

    def audit_losses(self) -> int:
        """Records the running audit found missing or altered."""
        return sum(
            value for key, value in self.audit.items() if key in ("missing", "altered") and isinstance(value, int)
        )

    def verdict(self) -> str:
        """PASS, or FAIL with the reasons."""
        if self.passed:
            return "PASS"
        reasons = [self.aborted] if self.aborted else []
        if self.aborted is None and not self.caught_up:
            reasons.append("the mirror did not catch up within the deadline")
        if self.lost:
            reasons.append(f"lost {self.lost} record(s)")
        if self.audit_losses():
            reasons.append(f"the audit found {self.audit_losses()} record(s) missing or altered")
        if self.aborted is None:
            reasons += self.resume_problems()
        return "FAIL: " + "; ".join(r for r in reasons if r)

    def summary(self) -> str:
        """A few lines for the terminal."""
        lines = [f"soak {self.verdict()}"]
        lines += [
            t.report.line(t.topic)
            + f" verified={t.count('verified')} missing={t.count('missing_records')}"
            + f" altered={t.count('altered_records')}"
            + f" acked_missing_from_source={t.acked_missing}"
            for t in self.topics
        ]
        lines.append(
            f"producer: sent={self.sent} acked={self.acked} failed={self.failed} unacknowledged={self.unacknowledged}"
        )
        rereads = [c.rereads for t in self.topics for c in t.resume.values()]
        lines.append(
            f"group {GROUP}: consumed={self.consumed} partitions_committed={len(self.committed)} "
            f"checkpointed={len(self.points)} rereads_on_failover={sum(rereads)} (max {max(rereads, default=0)})"
        )
        lines.append(f"faults: {len(self.faults())}; surprises: {len(self.surprises())}")
        lines.append(f"kills: {dict(self.kills)}; exits on their own: {dict(self.exits)}")
        return "\n".join(lines)

    def faults(self) -> list[Event]:
        """Injected faults."""
        return [e for e in self.events if e.kind in EventLog.FAULT_KINDS]

    def surprises(self) -> list[Event]:
        """Crashes and outages nobody injected."""
        return [e for e in self.events if e.kind in EventLog.SURPRISE_KINDS]
