"""What the audit has found for one flow since this instance began leading it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.errors import StraitError
from shared.verify.align import Alignment
from shared.verify.findings import EXAMPLES_KEPT

LOSS_OPERATION = "audit"


class LossFound(StraitError):
    """The audit found records missing or altered: the status stays degraded, naming the first of them."""

    operation = LOSS_OPERATION


class NotVerifiable(StraitError):
    """A flow's transform failed, in the audit, on a record the mirror copied: what its copy should be is unknown
    (the record is skipped; the status stays degraded, naming it)."""

    operation = LOSS_OPERATION


@dataclass
class AuditTotals:
    """Running counts of one flow's audit; `losses` names the first ranges found lost."""

    verified: int = 0
    missing: int = 0
    altered: int = 0
    duplicates: int = 0
    unexpected: int = 0
    bytes_read: int = 0
    sampled_out: int = 0
    expired: int = 0
    unplaced: int = 0  # ranges with no offset sync to find their copy by (the flow writes none, or not yet)
    dropped: int = 0  # source records the flow's transforms drop: verified absent
    returned: int = 0  # source records provenance keeps from going back to the target: verified absent
    target_own: int = 0  # target records the flow did not write (active/active): not compared
    transform_failed: int = 0  # source records a transform failed on in the audit: skipped
    lag_records: int = 0
    losses: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, topic: str, partition: int, found: Alignment) -> None:
        """Count one range's findings; name where anything was lost."""
        self.verified += found.verified
        self.missing += found.missing.records
        self.altered += found.altered_records
        self.duplicates += found.duplicates
        self.unexpected += found.unexpected
        for lost in found.missing.finish():
            self._name(f"{topic}-{partition} missing {lost.first}-{lost.last} ({lost.records})")
        for changed in found.altered:
            self._name(f"{topic}-{partition} altered at source {changed.source_offset}, target {changed.target_offset}")

    def _name(self, loss: str) -> None:
        if len(self.losses) < EXAMPLES_KEPT:
            self.losses.append(loss)

    def failed(self, topic: str, partition: int, failure: str) -> None:
        """A transform failed on a source record the mirror copied: the record is skipped, and named."""
        self.transform_failed += 1
        if len(self.failures) < EXAMPLES_KEPT:
            self.failures.append(f"{topic}-{partition} at {failure}")

    def problems(self) -> list[StraitError]:
        """The standing findings: what was lost, and what a transform kept the audit from verifying."""
        found: list[StraitError] = []
        loss = self.loss()
        if loss is not None:
            found.append(loss)
        if self.failures:
            where = "; ".join(self.failures[:3])
            found.append(NotVerifiable(f"audit skipped {self.transform_failed} records a transform failed on: {where}"))
        return found

    def loss(self) -> LossFound | None:
        """The standing finding, if anything was lost."""
        if not (self.missing or self.altered):
            return None
        where = "; ".join(self.losses[:3])
        return LossFound(
            f"audit found {self.missing} records missing and {self.altered} altered on the target: {where}"
        )

    def details(self) -> dict[str, Any]:
        """Figures for the status record."""
        return {
            "verified": self.verified,
            "missing": self.missing,
            "altered": self.altered,
            "duplicates": self.duplicates,
            "unexpected": self.unexpected,
            "sampled_out": self.sampled_out,
            "expired_before_audit": self.expired,
            "unplaced": self.unplaced,
            "dropped": self.dropped,
            "returned": self.returned,
            "target_own": self.target_own,
            "transform_failed": self.transform_failed,
            "lag_records": self.lag_records,
            "losses": self.losses[:5],
            "transform_failures": self.failures[:5],
        }
