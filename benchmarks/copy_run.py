"""One measured copy: start a tool on a fresh flow, watch the remote topic fill up, stop the tool.

Progress is read from the target's end offsets (no records read), polled every 100 ms, so "first record"
and "last record" are the first polls that saw them. The tool's processes are sampled for CPU and memory
from its start until the last record arrived.

With a read_committed reader counting progress, the first record is still the first written on the target,
committed or not: the first a reader receives comes only with a first commit, and timing from there would
credit a tool for holding its first transaction open while it copies.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.committed_records import CommittedRecords
from benchmarks.console import say
from benchmarks.contenders import STRAIT, Mirror, MirrorSetup, open_mirror
from benchmarks.datasets import Dataset
from benchmarks.lab import EndOffsets, Lab, RemoteEnds, delete_topics, make_ready_topics
from benchmarks.usage import Usage, UsageSampler
from benchmarks.verify_speed import profile_verify, verify_copy
from shared.localkafka.cluster import ClusterAddress

POLL_S = 0.1
Attach = Callable[[Mirror], Callable[[], None]]  # called once the tool started; returns what to call at the end


@dataclass(frozen=True)
class CopyResult:
    """Seconds from the tool's start to the first record written on the target and to the last record there (with
    a read_committed reader: the last it received)."""

    tool: str
    dataset: Dataset
    first_s: float
    last_s: float
    usage: Usage

    @property
    def copy_s(self) -> float:
        """From the first record on the target to the last: the copy itself, without start-up."""
        return max(1e-3, self.last_s - self.first_s)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for the raw samples."""
        return {
            "tool": self.tool,
            "records": self.dataset.label,
            "count": self.dataset.records,
            "first_record_s": round(self.first_s, 3),
            "last_record_s": round(self.last_s, 3),
            "copy_s": round(self.copy_s, 3),
            "cpu_s": round(self.usage.total_cpu_s, 2),
            "startup_cpu_s": None if self.usage.startup_cpu_s is None else round(self.usage.startup_cpu_s, 2),
            "peak_rss_mib": round(self.usage.peak_total_rss_mib, 1),
        }


def copy_topic(
    lab: Lab,
    tool: str,
    dataset: Dataset,
    *,
    timeout_s: float,
    attach: Attach | None = None,
    verify: bool = False,
    source: ClusterAddress | None = None,
    source_consumer: tuple[tuple[str, str], ...] = (),
    flow_settings: tuple[tuple[str, str], ...] = (),
    exactly_once: bool = False,
    read_committed: bool = False,
    inspect: Callable[[str], None] | None = None,
    remote_made_first: bool = False,
) -> CopyResult:
    """Mirror the already filled dataset topic with `tool` on a fresh flow; raise if it does not finish in time.
    With `verify`, the finished copy is verified (`strait verify`'s engine) before its remote topic goes.
    `source`: how the tool reaches the source (default: directly; the WAN section: through the fault proxy);
    `source_consumer`: the tool's `<source>.consumer.*` settings; `flow_settings`: more keys of the flow;
    `exactly_once`: both tools deliver exactly once. `read_committed` (implied by `exactly_once`): progress is what
    a read_committed consumer of the remote topic received (an exactly-once copy's end offsets count its
    transaction markers and open transactions), not the end offsets. `inspect`: called with the remote topic's name
    once the tool stopped, before the topic goes. `remote_made_first`: the remote topic is made, and every log of it
    answers, before the tool starts (as section 9 does: at many partitions a target makes its logs one by one, and
    that time is the broker's, not the tool's)."""
    source_alias, target_alias = lab.aliases()
    setup = MirrorSetup(
        source_alias,
        target_alias,
        topics=dataset.topic,
        tasks=lab.options.tasks,
        source_consumer=source_consumer,
        flow_settings=flow_settings,
        exactly_once=exactly_once,
    )
    run_dir = lab.run_dir(f"{source_alias}-{tool.lower()}-{dataset.topic}")
    mirror = open_mirror(tool, setup, source or lab.source, lab.target, run_dir)
    remote = f"{source_alias}.{dataset.topic}"
    if remote_made_first:
        make_ready_topics(lab.target, [remote], dataset.partitions)
    target = lab.target.client_properties()
    committed = read_committed or exactly_once
    probe: EndOffsets | CommittedRecords = (
        CommittedRecords(target, remote, dataset.partitions)
        if committed
        else EndOffsets(target, remote, dataset.partitions)
    )
    written = RemoteEnds(target, [remote], dataset.partitions) if committed else None
    first: float | None = None
    startup_cpu: float | None = None
    sampler: UsageSampler | None = None
    say(f"{tool}: copy {dataset.records:,} x {dataset.label} ({source_alias}->{target_alias})")
    try:
        began = time.monotonic()
        mirror.start()
        sampler = mirror.measure(f"copy {dataset.label}")
        detach = attach(mirror) if attach is not None else None
        while True:
            copied = probe.total()
            now = time.monotonic() - began
            if first is None and (copied or (written is not None and any(written.ends().values()))):
                first, startup_cpu = now, sampler.cpu_total()
            if copied >= dataset.records:
                break
            if not mirror.alive():
                raise RuntimeError(f"{tool} exited during the copy; its log ends with:\n{mirror.log_tail()}")
            if now > timeout_s:
                raise TimeoutError(f"{tool} copied {copied} of {dataset.records} records in {timeout_s:.0f}s")
            time.sleep(POLL_S)
        usage = sampler.finish(dataset.records)
        usage.startup_cpu_s = startup_cpu
        if detach is not None:
            detach()
    finally:
        if sampler is not None:
            sampler.finish()  # a no-op after the measured finish; stops the sampling thread after an error
        mirror.stop()
        probe.close()
    if verify:
        say(f"{tool}: verifying the copy")
        config = run_dir / "mm2.properties"
        checked = verify_copy(config, setup.flow, dataset.topic, tool, dataset.label, dataset.records)
        lab.verifications.append(checked)
        say(f"{tool}: verified {checked.totals['verified']:,} in {checked.totals['wall_s']:.1f} s")
        if lab.profile_wanted and lab.verify_profile is None and tool == STRAIT and dataset.label == "100 B":
            say(f"{tool}: verifying the copy once more under py-spy (profile, not measured)")
            profile = profile_verify(config, setup.flow, dataset.topic, run_dir)
            lab.verify_profile = {"what": f"{dataset.label}, {tool}'s copy", **profile}
    if inspect is not None:
        inspect(remote)
    delete_topics(lab.target_admin(), [remote])
    assert first is not None
    say(f"{tool}: first record after {first:.1f} s, last after {now:.1f} s")
    return CopyResult(tool, dataset, first, now, usage)
