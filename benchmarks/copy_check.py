"""The verifier's word on each latency run's copy: once the drain ended and the tool stopped, source and target are
compared record by record, so a run that lost records says so whatever its measuring consumer counted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.verify_speed import verify_totals

HEADER = "verified copy per run: missing / duplicates"


@dataclass(frozen=True)
class CopyCheck:
    """What `strait verify`'s engine found on one run's copy."""

    verified: int
    missing: int  # source records the target lacks: a gap, or a tail the tool had not copied when the run ended
    altered: int
    duplicates: int  # second copies (at-least-once replays): not a loss
    unexpected: int  # target records that match no source record
    elapsed_s: float

    @classmethod
    def of(cls, totals: Mapping[str, Any]) -> CopyCheck:
        """From the verifier's totals. MM2 keeps no progress, so there a tail the target lacks is "not yet copied"
        rather than missing; once the run is over, both are records that never reached the target."""
        return cls(
            verified=int(totals["verified"]),
            missing=int(totals["missing"]) + int(totals["not_yet_copied"]),
            altered=int(totals["altered"]),
            duplicates=int(totals["duplicates"]),
            unexpected=int(totals["unexpected"]),
            elapsed_s=float(totals["elapsed_s"]),
        )

    @property
    def lost(self) -> int:
        """Records the target lacks or holds changed."""
        return self.missing + self.altered

    def cell(self) -> str:
        """'0 / 12' (missing / duplicates), with altered and unexpected records named when there are any."""
        text = f"{self.missing:,} / {self.duplicates:,}"
        others = ((self.altered, "altered"), (self.unexpected, "unexpected"))
        shown = [f"{count:,} {what}" for count, what in others if count]
        return f"{text} ({', '.join(shown)})" if shown else text

    def summary(self) -> str:
        """One line for the console."""
        return (
            f"verified {self.verified:,} records in {self.elapsed_s:.1f} s: {self.missing:,} missing, "
            f"{self.altered:,} altered, {self.duplicates:,} duplicates"
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the raw samples."""
        return asdict(self)


def check_copy(config: Path, flow: str, topics: str) -> CopyCheck:
    """Verify the source topics `topics` (a regex) of `flow` in the run's properties file `config`."""
    return CopyCheck.of(verify_totals(config, flow, topics))


def run_cells(checks: Sequence[CopyCheck | None]) -> str:
    """Each run's cell in run order, '0 / 0; 22 / 0'; '-' for a run with no verified copy."""
    return "; ".join("-" if check is None else check.cell() for check in checks) or "-"


def copy_notes(runs: Iterable[tuple[str, CopyCheck | None]], what: str = "run's copy") -> list[str]:
    """A note for each (run's name, its check) whose copy lacks records or holds them changed; when every checked
    copy is whole, one note that says so (`what`: what was verified, in words)."""
    notes = []
    checked = 0
    for run, check in runs:
        checked += check is not None
        if check is None or not check.lost:
            continue
        headline = "RECORDS MISSING" if check.missing else "RECORDS ALTERED"
        altered = f" and {check.altered:,} altered" if check.altered else ""
        notes.append(
            f"{run}: {headline}: the verifier found {check.missing:,} source records not on the target"
            f"{altered} ({check.verified:,} verified, {check.duplicates:,} duplicates)."
        )
    if checked and not notes:
        notes.append(f"Every {what} verified record by record ({checked}): no record missing or altered.")
    return notes
