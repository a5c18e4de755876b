"""Exactly-once start-up fencing: every transactional id an earlier run used is fenced; a guess only when the
target cannot list them at all."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from services.data_mirror import flow_runtime
from services.data_mirror.flow_runtime import FlowRuntime
from shared.control.topic_names import mirror_transactional_id
from shared.errors import KafkaOperationError

FLOW = "A->B"


def _runtime() -> FlowRuntime:
    runtime = object.__new__(FlowRuntime)  # only the flow's names and clients' settings are needed to fence
    runtime.flow = SimpleNamespace(  # type: ignore[assignment]
        name=FLOW, target="B", target_admin_props=lambda: {}, target_producer_props=lambda: {}
    )
    return runtime


def _fenced(monkeypatch: pytest.MonkeyPatch, answers: list[Any]) -> list[str]:
    """The ids fenced at a start with 2 tasks, the listing answering `answers` in turn (an exception is raised)."""
    fenced: list[str] = []

    def listing(_props: Any, *, cluster: str) -> set[str]:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return set(answer)

    monkeypatch.setattr(flow_runtime, "transactional_ids", listing)
    monkeypatch.setattr(flow_runtime, "fence_transactional_ids", lambda _p, ids, cluster: fenced.extend(ids))
    _runtime()._fence_previous_transactions(2)
    return fenced


def test_a_coordinator_loading_after_a_restart_is_waited_out_and_every_listed_slot_fenced(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loading = KafkaOperationError("error 14 (COORDINATOR_LOAD_IN_PROGRESS)", operation="list transactions")
    fenced = _fenced(monkeypatch, [loading, {mirror_transactional_id(FLOW, 11)}])
    assert mirror_transactional_id(FLOW, 11) in fenced, "a zombie of a larger earlier run is fenced"
    assert mirror_transactional_id(FLOW, 7) not in fenced, "no guess when the listing answered"


def test_a_listing_error_that_is_not_retriable_stops_the_start_naming_the_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    denied = KafkaOperationError("broker 1 answered ListTransactions with error 29", operation="x", retriable=False)
    with pytest.raises(KafkaOperationError, match="exactly-once: cannot list the transactional ids on B"):
        _fenced(monkeypatch, [denied])


def test_a_broker_without_list_transactions_falls_back_to_the_first_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    from shared.kafka.transaction_listing import TransactionsNotListable

    fenced = _fenced(monkeypatch, [TransactionsNotListable("B: broker 1 does not support ListTransactions")])
    assert sorted(fenced) == sorted(mirror_transactional_id(FLOW, slot) for slot in range(8))
