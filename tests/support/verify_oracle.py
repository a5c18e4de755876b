"""The product's verifier as a test oracle: after a test copies data, `strait verify`'s engine must find nothing
lost, nothing altered and nothing that did not come from the source."""

from __future__ import annotations

from pathlib import Path

from shared.config import load_mm2_config
from shared.verify.flow_check import FlowVerification, VerifyScope, verify_flow


def verify(config: Path, flow: str, topics: str, **scope: object) -> FlowVerification:
    """Verify `topics` (a regex) of `flow` as configured in `config`."""
    return verify_flow(load_mm2_config(config).flow_named(flow), VerifyScope(topics=topics, **scope))  # type: ignore[arg-type]


def assert_nothing_lost(
    config: Path, flow: str, topics: str, *, records: int | None = None, exactly_once: bool = False
) -> FlowVerification:
    """Every source record of `topics` is on the target, unchanged (as the flow's transforms make it) and in order;
    `records` of them if given.

    At-least-once copies may hold duplicates; exactly-once copies may not.
    """
    result = verify(config, flow, topics)
    totals = result.totals
    summary = f"{flow} {topics}: {totals.as_json()} {[f.as_json() for f in result.findings if f.lost or f.unexpected]}"
    assert totals.partitions > 0, f"nothing verified: {summary}"
    assert (totals.missing, totals.altered, totals.unexpected, totals.not_verified) == (0, 0, 0, 0), summary
    assert totals.unverified == 0, summary  # a transform of the flow failed in verify
    assert totals.not_yet_copied == 0, summary
    if records is not None:
        assert totals.verified == records, summary
    if exactly_once:
        assert totals.duplicates == 0, summary
    return result
