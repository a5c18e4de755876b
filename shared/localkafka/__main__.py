"""`python -m shared.localkafka`: resolve the pinned Kafka runtime once, build the brokers' class-data archive once,
and say where they are."""

import os
import sys

from shared.localkafka.archive_builder import build_archive
from shared.localkafka.class_archive import archive_path
from shared.localkafka.jars import DEFAULT_POM, REPO_ROOT, HarnessError, kafka_classpath

try:
    classpath = kafka_classpath()
except HarnessError as exc:
    print(f"kafka runtime: {exc}", file=sys.stderr)
    raise SystemExit(1) from None
jars = classpath.split(os.pathsep)
print(f"kafka runtime: {len(jars)} jars ready ({DEFAULT_POM.relative_to(REPO_ROOT)})", file=sys.stderr)
if not archive_path(classpath).is_file():
    # A failure only costs start-up speed: it is reported, and the install goes on.
    try:
        print(f"kafka runtime: brokers' class-data archive {build_archive(classpath)}", file=sys.stderr)
    except Exception as exc:
        print(f"kafka runtime: no class-data archive (brokers start without it, slower): {exc}", file=sys.stderr)
