"""`python -m shared.localkafka`: resolve the pinned Kafka runtime once and say where it is."""

import os
import sys

from shared.localkafka.jars import DEFAULT_POM, REPO_ROOT, HarnessError, kafka_classpath

try:
    jars = kafka_classpath().split(os.pathsep)
except HarnessError as exc:
    print(f"kafka runtime: {exc}", file=sys.stderr)
    raise SystemExit(1) from None
print(f"kafka runtime: {len(jars)} jars ready ({DEFAULT_POM.relative_to(REPO_ROOT)})", file=sys.stderr)
