"""PySpark's Python worker daemon, with the copy path imported before it forks workers.

Spark runs `python -m <spark.python.daemon.module>` once per executor and forks a worker from it for each task
slot. Imported here, the modules a copy task needs come loaded in every worker it forks (importing them took
0.4 s of CPU in each worker) and their memory is shared copy-on-write.
"""

from pyspark.daemon import manager

import services.data_mirror.task_entry  # noqa: F401  (the import is the point)

if __name__ == "__main__":
    manager()
