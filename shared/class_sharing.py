"""Java's application class-data sharing, as Strait uses it for the JVMs it starts (Spark's driver, the harness's
brokers): an archive made once per install, named after what it depends on, used when it is there."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

QUIET_SHARING = ("-Xlog:cds=off", "-Xlog:cds+dynamic=off")  # an unusable archive is skipped without warnings


def java_launcher() -> Path | None:
    """The java binary a JVM starts from: JAVA_HOME's, else the one on PATH (None when there is none)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found else None


def installation_digest(*parts: Path | None, extra: str = "") -> str:
    """A short digest of what an archive depends on: each part by path, size and time (a reinstall changes them;
    a missing one counts as such), and `extra` (a classpath, say)."""
    marks = [extra] if extra else []
    for part in parts:
        if part is None or not part.exists():
            marks.append("none")
            continue
        stat = part.stat()
        marks.append(f"{part}:{stat.st_size}:{int(stat.st_mtime)}")
    return hashlib.sha256("|".join(marks).encode()).hexdigest()


def archive_options(archive: Path) -> list[str]:
    """The options that start a JVM from `archive`."""
    return [f"-XX:SharedArchiveFile={archive}", *QUIET_SHARING]
