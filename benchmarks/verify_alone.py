"""Section 1b on its own (`--only verify` without the throughput section): the copies it verifies, made for it.

Section 1 verifies each of its copies as it finishes (`copy_topic(verify=True)`); without it there is nothing to
verify, so this makes the same copies of the same data sets (each tool, each record size, per repeat), without
section 1's ceilings (raw produce, the replica fetcher) and its profile: a few minutes instead of section 1's
quarter of an hour, for the numbers of `strait verify` alone.
"""

from __future__ import annotations

from benchmarks import verify_speed
from benchmarks.contenders import TOOLS
from benchmarks.copy_run import copy_topic
from benchmarks.datasets import datasets, fill
from benchmarks.lab import Lab
from benchmarks.model import BenchOptions, Section
from benchmarks.throughput import copy_timeout_s


def run(options: BenchOptions, lab: Lab) -> Section:
    """Fill section 1's data sets, copy each with each tool per repeat, verify every copy; section 1b's table."""
    sets = datasets(options.quick)
    for dataset in sets:
        fill(lab, dataset)
    for _ in range(options.repeats):
        for dataset in sets:
            for tool in TOOLS:
                copy_topic(lab, tool, dataset, timeout_s=copy_timeout_s(dataset), verify=True)
    return verify_speed.run(options, lab.verifications, lab.verify_profile)
