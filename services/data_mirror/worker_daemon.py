"""PySpark's Python worker daemon, with the copy path imported before it forks workers.

Spark runs `python -m <spark.python.daemon.module>` once per executor and forks a worker from it for each task
slot. Imported here, the modules a copy task needs come loaded in every worker it forks (importing them took
0.4 s of CPU in each worker) and their memory is shared copy-on-write.

The workers log as the service does: JSON lines on stderr, client-library lines limited per cause (without it
aiokafka's lines reached the log through Python's last-resort handler, every one of them, and the tasks' own
events as console text). In local mode the driver's stderr relay reads them as events.
"""

import os
import sys

from pyspark.daemon import manager

import services.data_mirror.task_entry  # noqa: F401  (the import is the point)
from services.data_mirror.settings import PROG
from shared.observability import configure_logging

if __name__ == "__main__":
    configure_logging(PROG, os.environ.get("STRAIT_LOG_LEVEL", "INFO"), stream=sys.stderr)
    manager()
