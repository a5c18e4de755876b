"""The soak command's options."""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SoakOptions:
    """How long, how fast, which random faults and where the result goes."""

    minutes: float
    rate: int
    seed: int
    out: Path
    fault_gap_s: tuple[float, float]
    keep_logs: bool
    network_faults: bool = True
    topics: int = 2
    partitions: int = 6

    def command(self) -> str:
        """The command line that repeats this run (same seed, same faults in the same order)."""
        gap = f" --fault-gap {self.fault_gap_s[0]:g}:{self.fault_gap_s[1]:g}" if self.fault_gap_s != (60, 180) else ""
        network = "" if self.network_faults else " --no-network-faults"
        return (
            f"scripts/soak --minutes {self.minutes:g} --rate {self.rate} --seed {self.seed}{gap}{network} "
            f"--out {self.out}"
        )


def _gap(text: str) -> tuple[float, float]:
    low, _, high = text.partition(":")
    try:
        gap = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected MIN:MAX seconds, got {text!r}") from None
    if not 0 < gap[0] <= gap[1]:
        raise argparse.ArgumentTypeError(f"expected 0 < MIN <= MAX, got {text!r}")
    return gap


def parse_args(argv: Sequence[str] | None = None) -> SoakOptions:
    """Options from the command line; the seed is drawn (and reported) when not given."""
    parser = argparse.ArgumentParser(
        prog="scripts/soak",
        description="Replicate A->B with every Strait service as a process for a while, injecting broker restarts, "
        "service kills and network faults between the services and the brokers at random, then compare source and "
        "target record by record.",
    )
    parser.add_argument("--minutes", type=float, default=30, help="minutes of traffic and faults (default 30)")
    parser.add_argument("--rate", type=int, default=2000, help="records/s produced over all partitions (default 2000)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the fault schedule (default: random, reported)")
    parser.add_argument("--out", type=Path, default=Path("docs/soak-result.md"), help="markdown result file")
    parser.add_argument(
        "--fault-gap", type=_gap, default=(60.0, 180.0), metavar="MIN:MAX", help="seconds between faults (60:180)"
    )
    parser.add_argument("--keep-logs", action="store_true", help="keep the brokers' and services' logs after a pass")
    parser.add_argument(
        "--no-network-faults",
        dest="network_faults",
        action="store_false",
        help="services reach the brokers directly, and no connection resets, latency spikes or black holes",
    )
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.rate <= 0:
        parser.error("--minutes and --rate must be positive")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    return SoakOptions(args.minutes, args.rate, seed, args.out, args.fault_gap, args.keep_logs, args.network_faults)
