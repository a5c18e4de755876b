"""The provenance header: where a mirrored record was first written, and every cluster it has passed through
(Strait's own, off by default).

With `strait.provenance.enabled=true` a flow X->Y writes `strait.provenance: <cluster>:<topic>:<partition>:<offset>`
on a record's first copy (X, the topic, partition and offset it was written at) and adds `>X` on later hops, and
it never copies a record whose header names Y, as origin or as a hop. So an active/active pair under
IdentityReplicationPolicy, where topic names cannot tell a copy from an original, copies each record once to the
other side and never back, and so does any topology whose flows into a cluster all have it on. Neither a cluster
alias nor a topic name can hold `:` or `>`, so the value splits unambiguously.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from shared.errors import CodecError

PROVENANCE_HEADER = "strait.provenance"


@dataclass(frozen=True)
class Provenance:
    """The cluster, topic, partition and offset a record was first written at, and the clusters it left since."""

    cluster: str
    topic: str
    partition: int
    offset: int
    via: tuple[str, ...] = ()

    def encode(self) -> bytes:
        hops = "".join(f">{alias}" for alias in self.via)
        return f"{self.cluster}:{self.topic}:{self.partition}:{self.offset}{hops}".encode()

    @classmethod
    def decode(cls, value: bytes) -> Provenance:
        try:
            origin, *via = value.decode().split(">")
            cluster, topic, partition, offset = origin.split(":")
            return cls(cluster, topic, int(partition), int(offset), tuple(via))
        except (UnicodeDecodeError, ValueError):
            raise CodecError(f"not a {PROVENANCE_HEADER} header value: {value[:100]!r}") from None

    def visited(self, cluster: str) -> bool:
        """True when the record was written at `cluster`, or copied from it."""
        return cluster == self.cluster or cluster in self.via

    def copy_name(self, remote_name: Callable[[str, str], str]) -> str:
        """The topic a copy of the record has where it now is: each cluster it left names it once
        (`remote_name(cluster, topic)`, the replication policy's). A header found on any other topic was not written
        by a copy there (an application forwarded it with the headers of a record it read)."""
        name = self.topic
        for cluster in (self.cluster, *self.via):
            name = remote_name(cluster, name)
        return name

    def leaving(self, cluster: str) -> Provenance:
        """The provenance of the record's copy from `cluster` (named once)."""
        return self if self.visited(cluster) else replace(self, via=(*self.via, cluster))


def provenance_of(headers: Iterable[tuple[str, bytes | None]]) -> bytes | None:
    """The record's provenance header value, if it has one."""
    for name, value in headers:
        if name == PROVENANCE_HEADER:
            return value
    return None
