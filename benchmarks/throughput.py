"""Section 1: how fast each tool mirrors a pre-filled topic, against the target brokers' raw produce rate."""

from __future__ import annotations

from collections import defaultdict

from benchmarks.contenders import MM2, STRAIT, TOOLS, MirrorSetup, settings_text
from benchmarks.copy_run import CopyResult, copy_topic
from benchmarks.datasets import PARTITIONS, Dataset, datasets, fill, raw_produce_rate
from benchmarks.findings import throughput_notes
from benchmarks.lab import Lab
from benchmarks.model import BenchOptions, Section
from benchmarks.producer_perf import PerfResult
from benchmarks.replica_ceiling import ReplicaCopy, replica_bench
from benchmarks.strait_profile import StraitProfiler, profile_copy
from benchmarks.tables import best_median, best_median_rate, median, percent, ratio

KEY = "throughput"
MIB = 1024 * 1024
SLOWEST_BYTES_PER_S = 2 * MIB  # a copy slower than this is treated as stuck


def copy_timeout_s(dataset: Dataset) -> float:
    """Start-up allowance plus the data at a rate no healthy run falls below."""
    return 180 + dataset.value_bytes / SLOWEST_BYTES_PER_S


def run(options: BenchOptions, lab: Lab) -> Section:
    """Fill the topics, then per repeat and record size: the replica fetcher's rate, the raw produce rate,
    Strait's copy, MM2's copy."""
    sets = datasets(options.quick)
    fills = {dataset.label: fill(lab, dataset) for dataset in sets}
    copies: list[CopyResult] = []
    ceilings: dict[str, list[PerfResult]] = defaultdict(list)
    replicas: dict[str, list[ReplicaCopy]] = defaultdict(list)
    inline = StraitProfiler(lab) if lab.profile_wanted and options.quick else None
    with replica_bench(options, sets) as replica:
        for repeat in range(options.repeats):
            for dataset in sets:
                replicas[dataset.label].append(replica.catch_up(dataset, timeout_s=copy_timeout_s(dataset)))
                ceilings[dataset.label].append(raw_produce_rate(lab, dataset, repeat))
                for tool in TOOLS:  # alternating: Strait, MM2, Strait, MM2, ...
                    profiled = inline is not None and tool == STRAIT and repeat == 0 and dataset == sets[0]
                    attach = inline.attach if inline is not None and profiled else None
                    result = copy_topic(
                        lab, tool, dataset, timeout_s=copy_timeout_s(dataset), attach=attach, verify=not profiled
                    )
                    if inline is not None and profiled:
                        lab.profile = inline.summary(result, measured=True)
                    copies.append(result)
                    lab.usage.append(result.usage)
    if lab.profile_wanted and not options.quick:
        profile_copy(lab, sets[0], timeout_s=copy_timeout_s(sets[0]))
    rows: list[list[str]] = []
    for dataset in sets:
        rows += _rows(
            dataset, [c for c in copies if c.dataset == dataset], ceilings[dataset.label], replicas[dataset.label]
        )
    example = MirrorSetup("<src>", "<tgt>", topics="bench-1k", tasks=options.tasks)
    return Section(
        key=KEY,
        title="1. Throughput",
        method=(
            f"Each source topic ({PARTITIONS} partitions, values of random bytes, no keys) is filled once with "
            "Kafka's producer performance tool. Each run starts the tool on a fresh flow (new cluster aliases, so "
            "new remote topics and no stored progress) and polls the remote topic's end offsets every 100 ms: "
            "*start → last record* is from starting the tool's processes to the last record on the target (the "
            "issue's measure, start-up included); *first → last record* is the copy alone. Runs alternate "
            f"Strait, MM2 ({options.repeats} each per record size); each cell is *best / median* over the runs "
            "(best = the shortest run). MiB/s counts record values (2^20 bytes), as the producer tool does. "
            "*Raw produce* is kafka-producer-perf-test writing the same number of records of the same size to a "
            "fresh 12-partition topic on the same target broker with the same producer settings, measured before "
            "each pair of runs: the ceiling of a replicator that builds every record (as MM2 does). *Replica "
            "fetcher* is Kafka copying the same data set from one broker to another: a two-broker cluster with "
            "the same broker settings holds the data set (filled by the same producer) on broker 1; before each "
            "pair of runs broker 2 is added as a replica of every partition with one AlterPartitionReassignments "
            "call; the calling JVM polls both brokers' log sizes every 20 ms: *start* is the request, *first* the "
            "first byte on broker 2, *last* the moment its logs hold as many bytes as broker 1's (it then joins "
            "every ISR, which is awaited too); then the replica is removed again. The follower copies record "
            "batches as they are stored, as Strait's batch forwarding does, with Kafka's defaults (one replica "
            "fetcher thread per leader broker, 1 MiB per partition per fetch), and writes to the same disk: the "
            "ceiling of a replicator that forwards batches (that cluster stays up, idle, during the tools' runs). "
            "Each tool's share is its median copy rate over the "
            "median of each ceiling. Brokers, tools and load generators share this machine's cores, so every "
            "number here includes that contention."
        ),
        headers=[
            "records",
            "tool",
            "start → last: records/s",
            "start → last: MiB/s",
            "first → last: records/s",
            "first → last: MiB/s",
            "first record after (s)",
            "share of raw produce rate",
            "share of replica-fetcher rate",
        ],
        rows=rows,
        settings={
            "data sets": "; ".join(f"{d.label}: {d.records:,} records in `{d.topic}`" for d in sets),
            "both tools read this file (aliases fresh per run)": f"```properties\n{settings_text(example)}\n```",
        },
        raw={
            "runs": [c.as_dict() for c in copies],
            "raw_produce": {label: [vars(r) for r in results] for label, results in ceilings.items()},
            "replica_fetcher": {label: [vars(r) for r in results] for label, results in replicas.items()},
            "fill": {label: vars(result) for label, result in fills.items()},
            "strait_profile": lab.profile,
        },
        notes=throughput_notes(sets, copies, ceilings, replicas, lab.profile),
    )


def _rows(
    dataset: Dataset, copies: list[CopyResult], ceilings: list[PerfResult], replicas: list[ReplicaCopy]
) -> list[list[str]]:
    n, size = dataset.records, dataset.value_bytes / MIB
    by_tool = {tool: [c for c in copies if c.tool == tool] for tool in TOOLS}
    ceiling_rate = median([c.records_per_s for c in ceilings])
    replica_rate = median([r.records_per_s for r in replicas]) if replicas else 0.0
    rows = []
    for tool in TOOLS:
        runs = by_tool[tool]
        if not runs:
            continue
        total = [c.last_s for c in runs]
        copy = [c.copy_s for c in runs]
        rows.append(
            [
                dataset.label,
                tool,
                best_median_rate(n, total),
                best_median_rate(size, total, 1),
                best_median_rate(n, copy),
                best_median_rate(size, copy, 1),
                best_median([c.first_s for c in runs]),
                percent((n / median(copy)) / ceiling_rate) if ceiling_rate else "n/a",
                percent((n / median(copy)) / replica_rate) if replica_rate else "n/a",
            ]
        )
    if by_tool[STRAIT] and by_tool[MM2]:
        strait, mm2 = by_tool[STRAIT], by_tool[MM2]
        total_ratio = ratio(median([c.last_s for c in mm2]), median([c.last_s for c in strait]))
        copy_ratio = ratio(median([c.copy_s for c in mm2]), median([c.copy_s for c in strait]))
        rows.append(
            [dataset.label, "Strait ÷ MM2 (medians)", total_ratio, total_ratio, copy_ratio, copy_ratio, "", "", ""]
        )
    rates = [c.records_per_s for c in ceilings]
    mibs = [c.mib_per_s for c in ceilings]
    rows.append(
        [
            dataset.label,
            "raw produce (perf tool)",
            "",
            "",
            best_median(rates, 0, lower_is_better=False),
            best_median(mibs, 1, lower_is_better=False),
            "",
            "100%",
            percent(median(rates) / replica_rate) if replica_rate else "n/a",
        ]
    )
    if replicas:
        rows.append(
            [
                dataset.label,
                "replica fetcher (broker → broker)",
                best_median_rate(n, [r.copied_s for r in replicas]),
                best_median_rate(size, [r.copied_s for r in replicas], 1),
                best_median_rate(n, [r.seconds for r in replicas]),
                best_median_rate(size, [r.seconds for r in replicas], 1),
                "",
                percent(replica_rate / ceiling_rate) if ceiling_rate else "n/a",
                "100%",
            ]
        )
    return rows
