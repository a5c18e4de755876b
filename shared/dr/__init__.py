"""Disaster recovery: a flow's durable state, what a failover would lose (RPO), failover, failback and readiness."""
