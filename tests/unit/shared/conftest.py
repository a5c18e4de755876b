"""Fixtures of the shared library's tests."""

from __future__ import annotations

import pytest

from shared.kafka import record_digests
from shared.kafka.record_batches import SourceBatch


@pytest.fixture
def digested(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The base offsets of the batches whose records were digested."""
    seen: list[int] = []
    real = record_digests.digest_batch

    def spy(batch: SourceBatch, start: int, end: int) -> record_digests.Digested:
        seen.append(batch.base_offset)
        return real(batch, start, end)

    monkeypatch.setattr(record_digests, "digest_batch", spy)
    return seen
