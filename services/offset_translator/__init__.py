"""`strait-offset-translator`: HTTP answers for failover tooling from an in-memory index of MM2's internal topics."""
