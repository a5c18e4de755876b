"""The alert rules Prometheus loads name metrics the audit really exports (a renamed metric would silence them)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from prometheus_client import CollectorRegistry, generate_latest

from services.audit.metrics import AuditMetrics

REPO = Path(__file__).resolve().parents[4]


def exported_names() -> set[str]:
    registry = CollectorRegistry()
    metrics = AuditMetrics(registry)
    for counter in (metrics.verified, metrics.missing, metrics.altered, metrics.duplicates, metrics.unexpected):
        counter.labels("A->B").inc(0)
    metrics.lag.labels("A->B").set(0)
    metrics.skipped.labels("A->B", "expired").inc(0)
    metrics.position.labels("A->B", "t", "0").set(0)
    text = generate_latest(registry).decode()
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def test_every_metric_an_alert_rule_names_is_exported_by_the_audit() -> None:
    rules = yaml.safe_load((REPO / "deploy/prometheus/alerts.yml").read_text())
    (audit,) = [group for group in rules["groups"] if group["name"] == "strait-audit"]
    expressions = [rule["expr"] for rule in audit["rules"]]
    named = {name for expr in expressions for name in re.findall(r"\bstrait_[a-z_]+", expr)}
    assert named == {"strait_audit_missing_total", "strait_audit_altered_total", "strait_audit_lag_records"}
    assert named <= exported_names()


def test_prometheus_loads_the_alert_rules() -> None:
    config = yaml.safe_load((REPO / "deploy/prometheus/prometheus.yml").read_text())
    assert config["rule_files"] == ["/etc/prometheus/alerts.yml"]
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    volumes = compose["services"]["prometheus"]["volumes"]
    assert "./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in volumes
