"""The soak result as a markdown file (docs/soak-result.md by default)."""

from __future__ import annotations

from pathlib import Path

from tests.soak.clusters import BROKERS, GROUP, SOURCE, TARGET
from tests.soak.events import Event
from tests.soak.faults import LONG_DARK_S
from tests.soak.report import SoakResult


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def render(result: SoakResult) -> str:
    """The whole result document."""
    opts = result.options
    lines = [
        "# Soak result",
        "",
        f"**{result.verdict()}**",
        "",
        f"- date: {result.started_at.strftime('%Y-%m-%d %H:%M UTC')}",
        f"- traffic: {result.traffic_s / 60:.1f} min at {opts.rate} records/s (asked: {opts.minutes:g} min); "
        f"whole run with setup and verification {result.total_s / 60:.1f} min",
        f"- seed: {opts.seed}; faults every {opts.fault_gap_s[0]:g}-{opts.fault_gap_s[1]:g} s"
        + (
            "; the services reach the brokers through a fault proxy (network faults on), and each cluster goes dark "
            f"once for {LONG_DARK_S:g} s (past the producers' 120 s delivery timeout; see the events below)"
            if opts.network_faults
            else ""
        ),
        f"- command: `{opts.command()}`",
        f"- clusters: {SOURCE} and {TARGET}, {BROKERS} KRaft brokers each, min.insync.replicas=2; "
        f"{opts.topics} topics x {opts.partitions} partitions, replication factor {BROKERS}, internal topics "
        f"replication factor {BROKERS}; flow {SOURCE}->{TARGET} at-least-once",
        f"- services (one process each): {', '.join(result.services)}",
        "",
        "## Records",
        "",
        "Compared by `strait verify`'s engine (record by record: key, value, headers, timestamp, order; missing and "
        "altered are losses) and, as a second opinion, by value (each value is unique): both must find nothing lost.",
        "",
    ]
    rows = [
        [
            f"{t.topic} -> {t.remote}",
            str(t.report.source_records),
            str(t.report.target_records),
            str(t.count("verified")),
            str(t.count("missing_records")),
            str(t.count("altered_records")),
            str(t.count("unexpected")),
            str(t.count("duplicates")),
            str(t.report.lost),
            str(t.report.moved),
            str(t.acked_missing),
        ]
        for t in result.topics
    ]
    rows.append(
        [
            "**total**",
            str(sum(t.report.source_records for t in result.topics)),
            str(sum(t.report.target_records for t in result.topics)),
            str(sum(t.count("verified") for t in result.topics)),
            f"**{sum(t.count('missing_records') for t in result.topics)}**",
            f"**{sum(t.count('altered_records') for t in result.topics)}**",
            str(sum(t.count("unexpected") for t in result.topics)),
            str(sum(t.count("duplicates") for t in result.topics)),
            str(sum(t.report.lost for t in result.topics)),
            str(sum(t.report.moved for t in result.topics)),
            str(sum(t.acked_missing for t in result.topics)),
        ]
    )
    lines += _table(
        [
            "topic",
            "source",
            "target",
            "verified",
            "missing",
            "altered",
            "unexpected",
            "duplicates",
            "lost (value check)",
            "moved",
            "acked, not in source",
        ],
        rows,
    )
    examples = [e for t in result.topics for e in t.report.lost_examples][:5]
    if examples:
        lines += ["", f"Lost, e.g.: {', '.join(examples)}"]
    kinds = ", ".join(f"{k} x{v}" for k, v in result.failure_kinds.most_common()) or "none"
    lines += [
        "",
        f"Producer (idempotent, acks=all): {result.sent} sent, {result.acked} acknowledged, {result.failed} failed "
        f"after the client's retries ({kinds}), {result.unacknowledged} unacknowledged at the end, "
        f"{result.producer_clients} client(s). A failed delivery is the producer's loss, not the mirror's: the "
        "comparison counts what the source topic holds.",
        f"Mirror caught up: {'yes' if result.caught_up else 'NO'} ({result.catchup_s:.0f} s after traffic stopped).",
        "",
        "The audit service ran throughout (killed and restarted with the other services' faults; each instance "
        "verifies what lands after it starts). Its last instance's status at the end: "
        + (", ".join(f"{k} {v}" for k, v in result.audit.items() if k != "losses") or "no status")
        + ".",
        "",
        "## Failover offsets",
        "",
        f"Group `{GROUP}` consumed {result.consumed} records on {SOURCE}, committing every second, and stopped "
        "before the producer. Its checkpoints as the offset translator serves them "
        f"(`GET /v1/flows/{SOURCE}/{TARGET}/offsets`), against the committed offsets and the target's records:",
        "",
    ]
    rows = []
    for t in result.topics:
        for partition, check in sorted(t.resume.items()):
            point = result.points[(t.topic, partition)]
            rows.append(
                [
                    f"{t.topic}-{partition}",
                    str(result.committed.get((t.topic, partition), "-")),
                    str(point.upstream),
                    str(point.downstream),
                    str(check.missing),
                    str(check.rereads),
                    "yes" if check.past_end else "no",
                ]
            )
    lines += _table(
        ["partition", "committed", "checkpoint upstream", "resume at", "missed on failover", "re-read", "past end"],
        rows,
    )
    problems = result.resume_problems()
    lines += [
        "",
        f"Failover verdict: {'safe' if not problems else '; '.join(problems)}.",
        "",
        "## Faults and other events",
        "",
    ]
    lines += _table(
        ["t (s)", "time (UTC)", "kind", "what", "took (s)"],
        [[f"{e.at_s:.0f}", e.wall, e.kind, e.detail, f"{e.took_s:.0f}"] for e in sorted(result.events, key=_start)],
    )
    lines += ["", "## Services", ""]
    lines += _table(
        ["service", "killed (injected)", "exited on its own", "error log lines", "exit code on final SIGTERM"],
        [
            [
                name,
                str(result.kills[name]),
                str(result.exits[name]),
                str(result.error_lines[name]),
                _code(result.stop_codes.get(name, "-")),
            ]
            for name in result.services
        ],
    )
    return "\n".join(lines) + "\n"


def _code(code: int | str | None) -> str:
    return "killed after timeout" if code is None else str(code)


def write(result: SoakResult, path: Path) -> None:
    """Write the result file (creating its folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(result))


def _start(event: Event) -> float:
    """Events in the order they began (a fault is logged when it ends, with the time it began)."""
    return event.at_s
