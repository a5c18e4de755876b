"""Number formatting shared by the sections' tables (best / median pairs, ratios, percentages)."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.model import summary


def num(value: float, digits: int = 0) -> str:
    """1234567.8 -> '1,234,568' (or with `digits` decimals)."""
    return f"{value:,.{digits}f}"


def best_median_rate(amount: float, seconds: Sequence[float], digits: int = 0) -> str:
    """`amount` per second for the shortest run and the median run: 'best / median'."""
    fastest, typical = summary(seconds)
    return f"{num(amount / fastest, digits)} / {num(amount / typical, digits)}"


def best_median(values: Sequence[float], digits: int = 1, *, lower_is_better: bool = True) -> str:
    """'best / median' of repeated measurements."""
    if not values:
        return "n/a"
    typical = summary(values)[1]
    best = min(values) if lower_is_better else max(values)
    return f"{num(best, digits)} / {num(typical, digits)}"


def ratio(numerator: float, denominator: float) -> str:
    """'1.23x'."""
    return f"{numerator / denominator:.2f}x" if denominator else "n/a"


def percent(fraction: float) -> str:
    """0.4567 -> '46%'."""
    return f"{fraction * 100:.0f}%"


def median(values: Sequence[float]) -> float:
    """The median of repeated measurements."""
    return summary(values)[1]
