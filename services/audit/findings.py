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
    lag_records: int = 0
    losses: list[str] = field(default_factory=list)

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
            "lag_records": self.lag_records,
            "losses": self.losses[:5],
        }
