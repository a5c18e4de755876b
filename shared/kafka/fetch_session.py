"""Incremental fetch sessions (KIP-227): a fetch names only the partitions whose request changed.

Without a session every Fetch lists every partition a task reads and the broker answers for every one of them, so
a task with thousands of quiet partitions encodes, sends and decodes thousands of entries per fetch. In a session
the broker keeps the partitions and their fetch positions: a request names only the partitions added or changed
(fetch offset, leader epoch or size) and those to forget, and the answer carries only the partitions with records
or a changed high watermark, log start or error. Kafka's Java consumer does the same (its FetchSessionHandler).

Pure bookkeeping, one session per broker; the caller sends one request at a time per session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shared.kafka.error_codes import FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH
from shared.partition_key import PartitionKey

PartitionRequest = tuple[int, int, int]  # (fetch offset, current leader epoch, max bytes)

NO_SESSION = 0
OPEN_EPOCH = 0  # with NO_SESSION: a full request asking the broker to open a session
MAX_EPOCH = 2**31 - 1  # epochs are int32; after the largest the next is 1 (0 would open a new session)
SESSION_LOST = frozenset({FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH})


@dataclass(frozen=True)
class SessionRequest:
    """What one Fetch carries: the session, its epoch, the partitions named and those the broker may forget."""

    session_id: int
    epoch: int
    partitions: dict[PartitionKey, PartitionRequest]
    forgotten: list[PartitionKey]

    @property
    def full(self) -> bool:
        """True when the request names every partition (a new session, or none)."""
        return self.session_id == NO_SESSION


class FetchSession:
    """The client side of one broker's fetch session: which partitions the broker holds, at which positions."""

    def __init__(self) -> None:
        self.session_id = NO_SESSION
        self.epoch = OPEN_EPOCH
        self._held: dict[PartitionKey, PartitionRequest] = {}  # what the broker holds after the last answer
        self._sent: dict[PartitionKey, PartitionRequest] | None = None  # what it holds once this request lands

    def request(self, wanted: Mapping[PartitionKey, PartitionRequest]) -> SessionRequest:
        """The next request for `wanted` (every partition to fetch now, with its fetch position)."""
        self._sent = dict(wanted)
        if self.session_id == NO_SESSION:
            return SessionRequest(NO_SESSION, OPEN_EPOCH, dict(wanted), [])
        changed = {key: part for key, part in wanted.items() if self._held.get(key) != part}
        forgotten = [key for key in self._held if key not in wanted]
        return SessionRequest(self.session_id, self.epoch, changed, forgotten)

    def answered(self, error_code: int, session_id: int) -> bool:
        """Book the answer to the last request; False when the broker lost the session (evicted, or an epoch it
        did not expect): the answer carries no partitions, and the next request opens a new session in full."""
        sent, self._sent = self._sent, None
        if error_code in SESSION_LOST or sent is None:
            self.reset()
            return False
        if self.session_id == NO_SESSION:
            # A broker whose session cache is full answers without a session: the next request is full again.
            self.session_id, self.epoch = session_id, 1 if session_id != NO_SESSION else OPEN_EPOCH
        else:
            self.epoch = 1 if self.epoch >= MAX_EPOCH else self.epoch + 1
        self._held = sent if self.session_id != NO_SESSION else {}
        return True

    def reset(self) -> None:
        """Forget the session (after a request that got no answer): the next request opens a new one."""
        self.session_id, self.epoch, self._held, self._sent = NO_SESSION, OPEN_EPOCH, {}, None
