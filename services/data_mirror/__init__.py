"""data-mirror: a PySpark driver that copies records between clusters and writes MM2 offset syncs."""
