"""What a flow does to the records it copies, one implementation for both copiers and for the verifier: the
provenance rules and the flow's transforms.

With provenance on (`strait.provenance.enabled`), a record whose header names the target came from there (or
passed through it) and is not copied (`returned`); a header not on the topic its path names was forwarded by an
application with another record's headers, so it is removed and the record copied as an original
(`provenance_ignored`). Then the flow's transforms (`transforms.TransformChain`, as they apply to the partition's
remote topic); then each record kept is stamped: a first copy names where it was written, a later hop adds the
cluster it leaves. The record copier asks for one record at a time (`one`), the batch copier for a batch's records
(`batch`); both get the same answers, counted on the partition (`dropped`, `returned`, `provenance_ignored`).
`strait verify` and the audit ask `batch` of the source's records to know what the target must hold (and `copied`
which target records a flow with provenance wrote).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Protocol

from shared.config.transforms import TransformSpec
from shared.errors import CodecError
from shared.records.provenance import PROVENANCE_HEADER, Provenance, provenance_of
from shared.replication_policy import ReplicationPolicy
from shared.reshape.effect import ChainEffect, chain_effect
from shared.reshape.mirror_record import MirrorRecord, mutable
from shared.reshape.python_transforms import BatchCallFailed, TransformFailed
from shared.reshape.transforms import Chained, TransformChain, for_topic


class Where(Protocol):
    """A source partition and its remote topic (data-mirror's `PartitionWork`)."""

    @property
    def source_topic(self) -> str: ...
    @property
    def remote_topic(self) -> str: ...
    @property
    def partition(self) -> int: ...


class Tally(Protocol):
    """A partition's copy as the rules see it: where it goes, and its counts of records not copied as they came
    (data-mirror's `PartitionCopy`, the verifier's count)."""

    @property
    def work(self) -> Where: ...

    dropped: int
    returned: int
    provenance_ignored: int


class Reshaper:
    """A task's transforms and provenance rules, ready per remote topic (TopicNameMatches decided once)."""

    def __init__(
        self,
        source: str,
        target: str,
        transforms: Sequence[TransformSpec],
        *,
        provenance: bool = False,
        policy: ReplicationPolicy | None = None,
    ) -> None:
        """Flow `source`->`target` (cluster aliases) with its chain; `provenance`: headers written and followed,
        trusted on the topic their path names by `policy` (None: on any topic)."""
        self.source_alias, self.target_alias = source, target
        self.origin = source if provenance else None  # the cluster a provenance header names
        self.policy = policy
        self.transforms = tuple(transforms)
        self._chains: dict[str, tuple[TransformChain, ChainEffect]] = {}

    def __bool__(self) -> bool:
        return bool(self.transforms) or self.origin is not None

    def effect(self, work: Where) -> ChainEffect:
        """What the flow does to the partition's batches (`forwarding.chain_effect`)."""
        return self._chain(work.remote_topic)[1]

    def one(self, part: Tally, record: MirrorRecord) -> MirrorRecord | None:
        """The record to copy (changed or not), or None when it is not copied; TransformFailed when a transform
        fails on it."""
        chained = self._run(part, [record], [record.offset], batch_calls=False)
        if chained.failure is not None:
            raise TransformFailed(chained.failure)
        return chained.records[0] if chained.records else None

    def batch(self, part: Tally, records: list[Any], offsets: list[int]) -> Chained:
        """What to copy of a batch's decoded `records` (source offsets `offsets`): none changed, or the records kept
        (each the record given, or a MirrorRecord where it changed), up to the record a transform failed on; the
        offsets of records not copied because they came from the target in `Chained.returned`."""
        try:
            return self._run(part, records, offsets, batch_calls=True)
        except BatchCallFailed:  # the decoded records are as they came: the per-record functions name the record
            return self._run(part, records, offsets, batch_calls=False)

    def copied(self, headers: Any) -> bool:
        """Whether a record of a remote topic with `headers` may be a copy this flow wrote (asked where applications
        write the remote topic too, as under IdentityReplicationPolicy). With provenance every copy carries the
        header and it names the flow's source (or it is one not readable, left as it came); a record without one was
        written on the target, one naming other clusters only was copied there by another flow. Without provenance
        any record may be a copy."""
        if self.origin is None:
            return True
        raw = provenance_of(headers)
        if raw is None:
            return False
        try:
            return Provenance.decode(raw).visited(self.origin)
        except CodecError:
            return True

    def _chain(self, topic: str) -> tuple[TransformChain, ChainEffect]:
        found = self._chains.get(topic)
        if found is None:
            steps = for_topic(self.transforms, topic)
            found = self._chains[topic] = (
                TransformChain(steps),
                chain_effect(steps, provenance=self.origin is not None),
            )
        return found

    def _run(self, part: Tally, records: list[Any], offsets: list[int], *, batch_calls: bool) -> Chained:
        work = part.work
        known: dict[int, Provenance] = {}
        returned: list[int] = []
        ignored = 0
        if self.origin is not None:
            records, offsets, known, returned, ignored = self._arrived(work, records, offsets)
        chain = self._chain(work.remote_topic)[0]
        if chain:
            chained = chain.apply_batch(records, offsets, work.remote_topic, work.partition, batch_calls=batch_calls)
        else:
            chained = Chained(records, offsets, changed=False)
        reached = len(offsets) if chained.failed_at is None else bisect_left(offsets, chained.failed_at)
        if self.origin is not None:
            self._stamp(work, chained, known)
        part.dropped += reached - len(chained.records)
        part.returned += len(returned)
        part.provenance_ignored += ignored
        chained.changed = chained.changed or bool(returned or ignored)
        chained.returned = returned
        return chained

    def _arrived(
        self, work: Where, records: list[Any], offsets: list[int]
    ) -> tuple[list[Any], list[int], dict[int, Provenance], list[int], int]:
        """The records not returning to the target, their offsets, their provenance (by offset) where they have a
        readable one, the offsets of those that returned, and how many had their header ignored."""
        kept: list[Any] = []
        kept_offsets: list[int] = []
        known: dict[int, Provenance] = {}
        returned: list[int] = []
        ignored = 0
        for record, offset in zip(records, offsets, strict=True):
            found = _provenance(record.headers)
            if found is not None and not self._written_by_a_copy(found, work.source_topic):
                ignored += 1  # forwarded by an application with another record's headers: an original
                record = mutable(record, offset, work.remote_topic, work.partition)
                record.headers = [header for header in record.headers if header[0] != PROVENANCE_HEADER]
                found = None
            if found is not None and found.visited(self.target_alias):
                returned.append(offset)  # it came from the target (or passed through it): copying it back would loop
                continue
            if found is not None:
                known[offset] = found
            kept.append(record)
            kept_offsets.append(offset)
        return kept, kept_offsets, known, returned, ignored

    def _written_by_a_copy(self, known: Provenance, topic: str) -> bool:
        """A header is a copy's own only on the topic its path names (the flow's policy at each hop)."""
        policy = self.policy
        return policy is None or known.copy_name(policy.format_remote_topic) == topic

    def _stamp(self, work: Where, chained: Chained, known: dict[int, Provenance]) -> None:
        """Write each kept record's provenance: where it was first written on a first copy, else the known one with
        the source as a hop."""
        assert self.origin is not None
        for index, (record, offset) in enumerate(zip(chained.records, chained.offsets, strict=True)):
            found = known.get(offset)
            if provenance_of(record.headers) is None:
                header = Provenance(self.origin, work.source_topic, work.partition, offset).encode()
                stamped = mutable(record, offset, work.remote_topic, work.partition)
                stamped.headers.append((PROVENANCE_HEADER, header))
            elif found is not None and not found.visited(self.origin):
                passed = found.leaving(self.origin).encode()
                stamped = mutable(record, offset, work.remote_topic, work.partition)
                stamped.headers = [(n, passed if n == PROVENANCE_HEADER else v) for n, v in stamped.headers]
            else:
                continue
            chained.records[index] = stamped
            chained.changed = True


def _provenance(headers: Any) -> Provenance | None:
    """The record's provenance, if it has a readable one (a malformed header is left as it is)."""
    raw = provenance_of(headers)
    if raw is None:
        return None
    try:
        return Provenance.decode(raw)
    except CodecError:
        return None
