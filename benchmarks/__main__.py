"""`python -m benchmarks` (scripts/bench): run Strait and MirrorMaker 2 side by side and write BENCHMARKS.md."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer

from benchmarks.console import say
from benchmarks.contenders import MM2_HEAP_MB, PRODUCER
from benchmarks.environment import machine, versions
from benchmarks.lab import INDEX_BYTES
from benchmarks.model import BenchOptions
from benchmarks.report import Report, render
from benchmarks.runner import CHOICES, parse_only, run_sections

app = typer.Typer(add_completion=False, help=__doc__)


@app.command()
def bench(
    quick: Annotated[bool, typer.Option(help="a short smoke run (small data, one repeat): not for numbers")] = False,
    only: Annotated[str, typer.Option(help=f"comma list of sections: {', '.join(CHOICES)}")] = "",
    repeats: Annotated[
        int | None, typer.Option(min=1, help="runs per tool and case (default 3; 1 with --quick)")
    ] = None,
    out: Annotated[Path, typer.Option(help="where the report goes")] = Path("BENCHMARKS.md"),
    profile: Annotated[bool, typer.Option(help="one extra Strait copy under py-spy, for the notes")] = True,
    tasks: Annotated[int, typer.Option(min=1, help="MM2 tasks.max = Strait Spark tasks")] = os.cpu_count() or 2,
    workdir: Annotated[Path | None, typer.Option(help="clusters, configs and logs (default: a temp dir)")] = None,
    keep_workdir: Annotated[bool, typer.Option(help="keep the work directory (it is kept anyway on failure)")] = False,
) -> None:
    """Run the selected sections, then write the report; exit 1 if a section could not be measured."""
    try:
        selected = parse_only(only)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--only") from None
    work = workdir or Path(tempfile.mkdtemp(prefix="strait-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    options = BenchOptions(workdir=work, quick=quick, repeats=repeats or (1 if quick else 3), tasks=tasks)
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    host = machine()
    began = time.monotonic()
    say(f"sections: {', '.join(selected)}; repeats {options.repeats}; work directory {work}")
    outcomes = run_sections(options, selected, profile=profile)
    report = Report(
        outcomes=outcomes,
        machine=host,
        versions=versions(),
        settings=_common_settings(options),
        command=shlex.join(["scripts/bench", *sys.argv[1:]]),
        started=started,
        total_s=time.monotonic() - began,
        quick=quick,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(report))
    failed = [o.title for o in outcomes if o.section is None]
    say(f"wrote {out} ({report.total_s / 60:.1f} min)")
    if failed:
        say(f"not measured: {'; '.join(failed)}; logs kept in {work}")
        raise typer.Exit(1)
    if not keep_workdir and workdir is None:
        shutil.rmtree(work, ignore_errors=True)


def _common_settings(options: BenchOptions) -> dict[str, str]:
    producer = ", ".join(f"`{key}={value}`" for key, value in PRODUCER.items())
    return {
        "tasks": f"{options.tasks} (MM2 `tasks.max`; Strait `STRAIT_TASKS` Spark tasks on `local[{options.tasks}]`)",
        "target producer (both tools, from `<target>.producer.*`)": producer
        + "; compression: none (both clients' default)",
        "delivery": "at-least-once for both (MM2 dedicated mode without exactly-once; Strait's default)",
        "MirrorMaker 2": (
            f"`org.apache.kafka.connect.mirror.MirrorMaker <config> --clusters <target>`, heap {MM2_HEAP_MB} MiB, "
            "serial GC; its checkpoint and heartbeat connectors are switched off in the config"
        ),
        "Strait": (
            "`strait-topic-sync` and `strait-data-mirror` with the same config; Spark driver memory 512m "
            "and serial GC (defaults), commit interval 1000 ms (default)"
        ),
        "clusters": (
            "one single-broker KRaft cluster each for source and target (1 GiB heap), replication factor 1, "
            f"index files of {INDEX_BYTES // 1024} KiB (`log.index.size.max.bytes`; Kafka's default of 10 MiB "
            "filled this machine's memory with read-ahead at 4,000 partitions: see `benchmarks/lab.py`)"
        ),
        "repeats": str(options.repeats),
    }


if __name__ == "__main__":
    app()
