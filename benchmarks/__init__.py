"""Side-by-side benchmarks of Strait and MirrorMaker 2 on the same local brokers (scripts/bench)."""
