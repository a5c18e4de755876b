"""The soak run (`scripts/soak`): hours-long style replication under random faults, on demand and never in CI."""
