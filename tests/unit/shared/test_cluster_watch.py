"""ClusterWatch: a cluster that does not answer is named in the errors; a broken setting is reported too."""

from __future__ import annotations

from shared.cluster_watch import ClusterWatch


def test_a_cluster_nobody_listens_on_is_reported_unreachable_by_name() -> None:
    watch = ClusterWatch({"A": {"bootstrap.servers": "127.0.0.1:1"}}, timeout_s=1)
    assert watch.errors() == []
    watch.probe()
    errors = watch.errors(["A", "B"])
    assert len(errors) == 1
    assert errors[0].startswith("cluster A unreachable: "), errors
    assert set(watch.unreachable()) == {"A"}
