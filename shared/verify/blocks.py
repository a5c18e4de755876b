"""The alignment's inputs a block at a time: a block is the entries of one record batch (or of the part of one in the
range read), so the aligner can take a run of equal entries in one step instead of one entry at a time.

`SourceCursor` reads the source side in order, entry by entry or as a run matched against a target block's digests;
`RecentWindow` keeps the newest verified source entries (a replay of one is a duplicate) with bulk appends.

Pure: no I/O.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import NamedTuple, Protocol


class Entry(NamedTuple):
    """One record as the comparison sees it: its offset and a digest of key, value, headers and timestamp."""

    offset: int
    digest: int


class Block(Protocol):
    """Entries read together, in offset order: one record batch's records within the range read."""

    def offsets(self) -> Sequence[int]:
        """The entries' offsets, increasing."""
        ...

    def digests(self) -> Sequence[int]:
        """The entries' digests, in the same order."""
        ...

    def copies(self, source: Block) -> bool:
        """True when this (target) block is known to hold the same records as `source` without reading them (a
        batch forwarded as it was); False says nothing."""
        ...


class EntryRun:
    """A block of entries given as they are (tests, and callers that digest records themselves)."""

    __slots__ = ("_digests", "_offsets")

    def __init__(self, entries: Sequence[Entry]) -> None:
        self._offsets = [entry.offset for entry in entries]
        self._digests = [entry.digest for entry in entries]

    @classmethod
    def of(cls, offsets: Sequence[int], digests: Sequence[int]) -> EntryRun:
        """A block of these offsets and digests (in the same order)."""
        run = cls(())
        run._offsets, run._digests = list(offsets), list(digests)
        return run

    def offsets(self) -> Sequence[int]:
        return self._offsets

    def digests(self) -> Sequence[int]:
        return self._digests

    def copies(self, source: Block) -> bool:
        return False


def blocks_of(entries: Iterable[Entry], size: int = 1_000) -> Iterator[EntryRun]:
    """`entries` in blocks of `size`."""
    it = iter(entries)
    while chunk := list(islice(it, size)):
        yield EntryRun(chunk)


class SourceCursor:
    """The source's blocks read in order, an entry or a run at a time; only the block under way is held."""

    def __init__(self, blocks: Iterable[Block]) -> None:
        self._blocks = iter(blocks)
        self._block: Block | None = None
        self._offsets: Sequence[int] = ()
        self._digests: Sequence[int] = ()
        self._at = 0  # index of the next entry in the block under way

    def _load(self) -> bool:
        """False when every block was read; otherwise the next entry is at `_at` of the block under way."""
        while self._at >= len(self._digests):
            block = next(self._blocks, None)
            if block is None:
                self._block, self._offsets, self._digests, self._at = None, (), (), 0
                return False
            self._block, self._offsets, self._digests, self._at = block, block.offsets(), block.digests(), 0
        return True

    def next(self) -> Entry | None:
        """The next entry, taken; None at the end."""
        if not self._load():
            return None
        at = self._at
        self._at = at + 1
        return Entry(self._offsets[at], self._digests[at])

    def peek(self) -> Entry | None:
        """The next entry, left to be taken; None at the end."""
        if not self._load():
            return None
        return Entry(self._offsets[self._at], self._digests[self._at])

    def block_ahead(self) -> Block | None:
        """The block whose first entry is next, if the next entry starts a block."""
        if not self._load() or self._at:
            return None
        return self._block

    def take_block(self) -> tuple[Sequence[int], Sequence[int]]:
        """The rest of the block under way, taken: (offsets, digests)."""
        at = self._at
        self._at = len(self._digests)
        if not at:
            return self._offsets, self._digests
        return self._offsets[at:], self._digests[at:]

    def take_run(self, wanted: Sequence[int], start: int, below: int) -> tuple[list[int], list[int]]:
        """The longest run of next entries (offsets below `below`) whose digests equal wanted[start:], in turn,
        taken: (offsets, digests)."""
        offsets: list[int] = []
        digests: list[int] = []
        at_wanted = start
        while at_wanted < len(wanted) and self._load():
            at, block_offsets, block_digests = self._at, self._offsets, self._digests
            count = min(len(wanted) - at_wanted, len(block_digests) - at)
            if block_offsets[at + count - 1] >= below:
                count = bisect_left(block_offsets, below, at, at + count) - at
            ours, theirs = block_digests[at : at + count], wanted[at_wanted : at_wanted + count]
            equal = count if ours == theirs else _first_difference(ours, theirs)
            offsets.extend(block_offsets[at : at + equal])
            digests.extend(ours[:equal] if equal < count else ours)
            self._at, at_wanted = at + equal, at_wanted + equal
            if equal < count or at + count < len(block_digests):
                break  # a difference, or the range's end: the run ends here
        return offsets, digests


def _first_difference(ours: Sequence[int], theirs: Sequence[int]) -> int:
    return next(at for at, (one, other) in enumerate(zip(ours, theirs, strict=True)) if one != other)


class RecentWindow:
    """The newest `size` verified source entries (a later target entry equal to one is a duplicate).

    Entries are verified in source order, so offsets only grow: a digest is in the window when the offset of its
    newest verified copy is not older than the window's oldest entry. The index of newest copies is brought up to
    date only when asked (a clean copy never asks: every target entry equals the next source entry), with the
    entries added since; it is rebuilt from the window when it has grown to twice its size."""

    def __init__(self, size: int, entries: Iterable[Entry] = ()) -> None:
        self._size = size
        self._offsets: deque[int] = deque(maxlen=size)
        self._digests: deque[int] = deque(maxlen=size)
        self._newest: dict[int, int] = {}  # digest -> offset of its newest verified copy (up to `_unindexed`)
        self._unindexed = 0  # entries added (the newest ones) that `_newest` does not hold yet
        for entry in entries:
            self.add(entry.offset, entry.digest)

    def add(self, offset: int, digest: int) -> None:
        """One more verified entry."""
        self._offsets.append(offset)
        self._digests.append(digest)
        self._unindexed += 1

    def extend(self, offsets: Sequence[int], digests: Sequence[int]) -> None:
        """A run of verified entries, in order."""
        self._offsets.extend(offsets)
        self._digests.extend(digests)
        self._unindexed += len(digests)

    def _index(self) -> None:
        unindexed, self._unindexed = min(self._unindexed, len(self._digests)), 0
        if len(self._newest) + unindexed > 2 * self._size + 1_024 or unindexed == len(self._digests):
            self._newest = dict(zip(self._digests, self._offsets, strict=True))
            return
        digests = list(islice(reversed(self._digests), unindexed))
        offsets = list(islice(reversed(self._offsets), unindexed))
        self._newest.update(zip(reversed(digests), reversed(offsets), strict=True))

    def __contains__(self, digest: object) -> bool:
        if self._unindexed:
            self._index()
        newest = self._newest.get(digest) if isinstance(digest, int) else None
        return newest is not None and bool(self._offsets) and newest >= self._offsets[0]

    def entries(self) -> deque[Entry]:
        """The window's entries, oldest first."""
        return deque(Entry(offset, digest) for offset, digest in zip(self._offsets, self._digests, strict=True))
