"""MirrorMaker 2 itself, in dedicated mode, from the same Kafka release as the harness brokers.

Benchmarks and wire-compatibility tests run it beside Strait on the same clusters with the same MM2
properties file, so a difference in what the two produce is a difference in the replicators.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from shared.localkafka.processes import JvmProcess

MIRROR_MAKER_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"


def write_properties(path: Path, properties: Mapping[str, str]) -> Path:
    """Write a Java properties file (values as given; keys and values must not contain newlines)."""
    for key, value in properties.items():
        if "\n" in key or "\n" in value:
            raise ValueError(f"property {key!r} contains a newline")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
    return path


class MirrorMakerProcess:
    """One dedicated-mode MM2 JVM (`connect-mirror-maker.sh` without the script)."""

    def __init__(
        self,
        config: Path,
        *,
        log_path: Path,
        clusters: Sequence[str] = (),
        heap_mb: int = 1024,
    ) -> None:
        args = [str(config)]
        if clusters:
            args += ["--clusters", *clusters]
        self.config = config
        self.process = JvmProcess(MIRROR_MAKER_MAIN, args, log_path=log_path, heap_mb=heap_mb)

    @property
    def pid(self) -> int | None:
        """The JVM's pid while it runs."""
        return self.process.pid

    def start(self) -> MirrorMakerProcess:
        """Start MM2 in the background (it creates its internal topics and starts its connectors itself)."""
        self.process.start()
        return self

    def is_running(self) -> bool:
        """True while the JVM has not exited."""
        return self.process.is_running()

    def stop(self, timeout_s: float = 30) -> None:
        """SIGTERM (MM2 commits and shuts its connectors down), then SIGKILL after `timeout_s`."""
        self.process.stop(timeout_s=timeout_s)

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        self.process.kill()

    def log_tail(self, limit: int = 4000) -> str:
        """The end of MM2's log, for error messages."""
        return self.process.log_tail(limit)

    def __enter__(self) -> MirrorMakerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
