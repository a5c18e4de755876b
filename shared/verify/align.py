"""Line a source partition up with its remote copy, record by record, in one pass over each and bounded memory.

A remote partition is the source partition's records in order, with what a replicator may add or leave out:
a stretch not copied (retention took it first, or it was lost), a stretch copied twice (an at-least-once replay
after a restart), a record changed, a record that is not from the source at all. Both sides are read in order as
(offset, digest) entries; a target entry equal to the next source entry is verified. Otherwise the source is read
ahead, up to `window` entries (further when the offset syncs say the copy of this target record lies further), to
find it: the source entries passed over are missing, or, paired in order with the unmatched target entries between
the same two verified ones, altered. A target entry equal to a recently verified one is a duplicate.

Where a target record's source record should lie is predicted from the offset syncs (`locate`): before the
verified range it is outside the check, below the source's log start its source has gone (and a jump in the
predicted offsets there is a range that expired before it was copied).

Both sides come in blocks (`blocks.Block`: a record batch's entries). Where nothing is pending, a run of target
entries equal to the next source entries is verified in one step (`_run`), as `target` would verify them one by
one; a target block that is a forwarded copy of the next source block (`Block.copies`) is verified without its
digests. Anything else goes entry by entry, so the findings are the same whatever the blocks.

Pure: no I/O.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from shared.verify.blocks import Block, Entry, RecentWindow, SourceCursor
from shared.verify.findings import EXAMPLES_KEPT, AlteredRecord, RangeList

WINDOW_DEFAULT = 200_000


Anchor = tuple[int, int]  # an offset sync: (upstream offset, downstream offset)
Locate = Callable[[int], Anchor | None]  # target offset -> the sync that places it, if any


@dataclass(frozen=True, slots=True)
class Frame:
    """Where the check starts and ends on the source, and what the mirror has copied."""

    log_start: int  # the source partition's first offset still held
    source_from: int  # the first source offset verified (>= log_start)
    source_to: int  # the end of the verified source range (exclusive)
    copied_to: int | None  # the mirror's next source offset, when known: after it, nothing is owed yet


@dataclass
class Alignment:
    """What one pass found; `PartitionFindings` is built from it."""

    verified: int
    missing: RangeList
    altered: list[AlteredRecord]
    altered_records: int
    duplicates: int
    duplicate_offsets: list[int]
    unexpected: int
    unexpected_offsets: list[int]
    expired: RangeList
    source_gone: int
    not_yet_copied: int


class _Aligner:
    def __init__(
        self,
        source: Iterable[Block],
        frame: Frame,
        locate: Locate,
        window: int,
        recent: Iterable[Entry] = (),
        *,
        bounded: bool = False,
        later: Collection[int] | None = None,
    ) -> None:
        self._source = SourceCursor(source)
        self._frame = frame
        self._locate = locate
        self._window = window
        self._bounded = bounded  # one range of a longer watch: a target record copied after the range ends it
        self._later = later  # digests of the source's records after the range, when it ends at the source's end
        self._exhausted = False
        self._last_read = frame.source_from - 1  # the offset of the last source entry read
        self._ahead: deque[Entry] = deque()  # source entries read, not yet matched or passed over
        self._ahead_index: dict[int, int] = {}  # digest -> how many entries of `_ahead` carry it
        self._recent = RecentWindow(window, recent)  # verified source entries, newest last, at most `window`
        self._pending: list[int] = []  # target offsets since the last verified entry that matched nothing
        self._passed: list[int] = []  # source offsets passed over since then, kept to pair with `_pending`
        self._previous_missing = False  # the last source entry left behind was missing (ranges merge)
        self._gone_next: int | None = None  # the source offset the next gone target record should hold
        self._gone_anchor: Anchor | None = None  # the sync the last gone target record was placed by
        self.result = Alignment(0, RangeList(), [], 0, 0, [], 0, [], RangeList(), 0, 0)
        self._deferred = False  # the range's unplaced tail is left to the next range (`defer_tail`)

    # ---- source side ----
    def _read(self) -> Entry | None:
        if self._exhausted:
            return None
        entry = self._source.next()
        if entry is None:
            self._exhausted = True
            return None
        self._last_read = entry.offset
        return entry

    def _read_ahead(self) -> bool:
        entry = self._read()
        if entry is None:
            return False
        self._ahead.append(entry)
        self._ahead_index[entry.digest] = self._ahead_index.get(entry.digest, 0) + 1
        return True

    def _pop_ahead(self) -> Entry:
        entry = self._ahead.popleft()
        left = self._ahead_index[entry.digest] - 1
        if left:
            self._ahead_index[entry.digest] = left
        else:
            del self._ahead_index[entry.digest]
        return entry

    def _pass_over(self, entry: Entry) -> None:
        """A source entry the target skipped: altered if an unmatched target record waits for it, else missing."""
        if len(self._passed) < len(self._pending):
            self._passed.append(entry.offset)
            return
        self._missing(entry.offset)

    def _missing(self, offset: int) -> None:
        self.result.missing.add(offset, adjacent=self._previous_missing)
        self._previous_missing = True

    # ---- verified ----
    def _verified(self, entry: Entry) -> None:
        if self._gone_next is not None:
            self._close_gone()
        self._settle_pending()
        self._previous_missing = False
        self.result.verified += 1
        self._recent.add(entry.offset, entry.digest)

    def _verified_run(self, offsets: Sequence[int], digests: Sequence[int]) -> None:
        """`_verified` for each of a run of source entries, in one step."""
        if self._gone_next is not None:
            self._close_gone()
        self._settle_pending()
        self._previous_missing = False
        self.result.verified += len(digests)
        self._recent.extend(offsets, digests)
        self._last_read = offsets[-1]

    @property
    def recent(self) -> deque[Entry]:
        """The newest verified source entries (a replay of them later is a duplicate)."""
        return self._recent.entries()

    def defer_tail(self) -> tuple[int, int | None]:
        """The target ran out before the range was placed: leave its unplaced tail, and the target records still
        waiting, to the next range; (source offset, target offset or None) where that range starts."""
        source = self._passed[0] if self._passed else None
        if source is None and self._ahead and self._ahead[0].offset < self._frame.source_to:
            source = self._ahead[0].offset
        if source is None:
            following = self._read()
            source = self._frame.source_to if following is None else min(following.offset, self._frame.source_to)
        target = self._pending[0] if self._pending else None
        self._pending.clear()
        self._passed.clear()
        self._ahead.clear()
        self._ahead_index.clear()
        self._deferred = True
        return source, target

    def done(self) -> bool:
        """Every source entry of the range is placed and no target record waits: what follows is a later copy."""
        if self._pending:
            return False
        head = self._ahead[0] if self._ahead else self._source.peek()
        return head is None or head.offset >= self._frame.source_to

    def _settle_pending(self) -> None:
        """Pair the unmatched target records since the last verified one with the source records passed over."""
        pairs = min(len(self._pending), len(self._passed))
        for target_offset, source_offset in zip(self._pending[:pairs], self._passed[:pairs], strict=True):
            self.result.altered_records += 1
            if len(self.result.altered) < EXAMPLES_KEPT:
                self.result.altered.append(AlteredRecord(source_offset, target_offset))
        for target_offset in self._pending[pairs:]:
            self._unexpected(target_offset)
        for source_offset in self._passed[pairs:]:
            self._missing(source_offset)
        self._pending.clear()
        self._passed.clear()

    def _unexpected(self, target_offset: int) -> None:
        self.result.unexpected += 1
        if len(self.result.unexpected_offsets) < EXAMPLES_KEPT:
            self.result.unexpected_offsets.append(target_offset)

    # ---- target side ----
    def place(self, block: Block, *, ranged: bool = False) -> int | None:
        """Place a target block's entries in order. `ranged` (one range of a longer watch): stop once the range is
        placed (`done`) or at an entry copied after it, and return the target offset the next range starts at;
        None when the whole block was placed."""
        source = self._source.block_ahead() if not (self._pending or self._ahead) else None
        if source is not None and source.offsets()[-1] < self._frame.source_to and block.copies(source):
            offsets, digests = self._source.take_block()
            self._verified_run(offsets, digests)  # a forwarded copy: what `_run` would find, without its digests
            return block.offsets()[-1] + 1 if ranged and self.done() else None
        offsets, digests = block.offsets(), block.digests()
        at = 0
        while at < len(digests):
            if not self._pending:
                ran = self._run(digests, at)
                at += ran
                if ran and ranged and self.done():
                    return offsets[at - 1] + 1
                if at == len(digests):
                    break
            entry = Entry(offsets[at], digests[at])
            if not self.target(entry):
                return entry.offset
            at += 1
            if ranged and self.done():
                return entry.offset + 1
        return None

    def _run(self, digests: Sequence[int], start: int) -> int:
        """How many target entries from `start` on equal the next source entries (in the range), in turn: each is
        verified as `target` verifies a target entry equal to the next source entry while nothing is pending."""
        end = self._frame.source_to
        at = start
        while self._ahead and at < len(digests):  # entries read ahead first (a few at most)
            head = self._ahead[0]
            if head.digest != digests[at] or head.offset >= end:
                return at - start
            self._verified(self._pop_ahead())
            at += 1
        if self._ahead or at == len(digests):
            return at - start
        offsets, matched = self._source.take_run(digests, at, end)
        if matched:
            self._verified_run(offsets, matched)
        return at - start + len(matched)

    def target(self, entry: Entry) -> bool:
        """Place one target entry; False (bounded only) when it was copied after the range: it is left unplaced.

        Bounded, the source may be given past the range's end (`frame.source_to`): a target record equal to one of
        those later records marks where the range's copies end."""
        if self._ahead:
            if self._ahead[0].digest == entry.digest and self._ahead[0].offset < self._frame.source_to:
                self._verified(self._pop_ahead())
                return True
        elif not self._pending:  # the common case: the next source entry, with nothing held
            head = self._read()
            if head is not None and head.digest == entry.digest and head.offset < self._frame.source_to:
                self._verified(head)
                return True
            if head is not None:
                self._ahead.append(head)
                self._ahead_index[head.digest] = 1
        if self._bounded and self._beyond(entry.digest):
            return False
        # A copy of a record already verified is a duplicate even when an identical record (same key, value,
        # headers and timestamp) lies ahead: taking the one ahead would pass over the real next record.
        if entry.digest in self._recent:
            self.result.duplicates += 1
            if len(self.result.duplicate_offsets) < EXAMPLES_KEPT:
                self.result.duplicate_offsets.append(entry.offset)
            return True
        if entry.digest in self._ahead_index:
            self._verify_ahead(entry.digest)
            return True
        anchor = self._locate(entry.offset)
        predicted = None if anchor is None else anchor[0] + entry.offset - anchor[1]
        if predicted is not None and predicted < self._frame.source_from:
            self._before_range(anchor, predicted)  # type: ignore[arg-type]
            return True
        self._close_gone()
        if predicted is not None and predicted >= self._frame.source_to:
            if self._later is not None and not self._bounded and entry.digest not in self._later:
                self._unexpected(entry.offset)  # past the source's end and a copy of nothing: another producer's
            return not self._bounded  # copied after the range verified: outside the check, or the next range's
        if self._search(entry.digest, predicted):
            if self._bounded and self._beyond(entry.digest):
                return False
            self._verify_ahead(entry.digest)
            return True
        if self._bounded and self._beyond(entry.digest):
            return False
        if len(self._pending) >= self._window:
            self._settle_pending()  # bounded memory: the oldest unmatched records are settled as they stand
        self._pending.append(entry.offset)
        return True

    def _beyond(self, digest: int) -> bool:
        """True if the first source entry read ahead with this digest lies after the range."""
        if digest not in self._ahead_index or self._ahead[-1].offset < self._frame.source_to:
            return False
        first = next(entry for entry in self._ahead if entry.digest == digest)
        return first.offset >= self._frame.source_to

    def _search(self, digest: int, predicted: int | None) -> bool:
        """Read ahead for `digest`: up to the window, and on to where the syncs say its copy lies."""
        while digest not in self._ahead_index:
            full = len(self._ahead) >= self._window
            if full and (predicted is None or self._last_read >= predicted):
                return False
            if full and self._ahead[0].offset >= self._frame.source_to:
                return False  # only later ranges' records are ahead: none is passed over
            if full:
                self._pass_over(self._pop_ahead())
            if not self._read_ahead():
                return False
        return True

    def _verify_ahead(self, digest: int) -> None:
        while self._ahead[0].digest != digest:
            self._pass_over(self._pop_ahead())
        self._verified(self._pop_ahead())

    def _before_range(self, anchor: Anchor, predicted: int) -> None:
        """A target record copied from before the verified range: gone from the source, or simply not asked for."""
        if predicted >= self._frame.log_start:
            return
        self.result.source_gone += 1
        # Records placed by one sync are one-to-one copies, so each holds the offset after the previous one's;
        # a new sync places its first record afresh, and the offsets it jumps over expired before being copied.
        expected = self._gone_next
        if anchor != self._gone_anchor or expected is None:
            if expected is not None and predicted > expected:
                self._expired(expected, predicted)
            expected = predicted
        self._gone_anchor = anchor
        self._gone_next = expected + 1

    def _close_gone(self) -> None:
        """After the last gone record, the offsets up to the source's log start were never copied: expired."""
        if self._gone_next is not None:
            self._expired(self._gone_next, self._frame.log_start)
            self._gone_next = None

    def _expired(self, first: int, end: int) -> None:
        last = min(end, self._frame.log_start) - 1
        if last >= first:
            self.result.expired.add_span(first, last, last - first + 1)

    # ---- the end ----
    def finish(self) -> Alignment:
        """Settle what is left: unmatched target records against the source's tail, then the tail itself."""
        self._close_gone()
        if self._deferred:
            return self.result
        tail: list[Entry] = list(self._ahead)
        self._ahead.clear()
        copied_to = self._frame.copied_to
        for entry in self._iterate_rest(tail):
            owed = copied_to is not None and entry.offset < copied_to
            if len(self._passed) < len(self._pending):
                self._passed.append(entry.offset)
            elif owed:
                self._missing(entry.offset)
            else:
                self.result.not_yet_copied += 1
        self._settle_pending()
        return self.result

    def _iterate_rest(self, tail: list[Entry]) -> Iterable[Entry]:
        """The range's source entries not placed (read past the range's end only to find where its copies end)."""
        end = self._frame.source_to
        yield from (entry for entry in tail if entry.offset < end)
        if tail and tail[-1].offset >= end:
            return
        while (entry := self._read()) is not None and entry.offset < end:
            yield entry


@dataclass
class RangeAlignment:
    """One range aligned as part of a longer watch (the audit): what it found and where the next range starts."""

    found: Alignment
    next_target_offset: int | None  # where the next range starts on the target; None if nothing was read
    recent: deque[Entry]
    next_source_offset: int  # where the next range starts on the source: the range's end, unless its tail waits


def align_range(
    source: Iterable[Block],
    target: Iterable[Block],
    frame: Frame,
    *,
    locate: Locate,
    window: int,
    recent: Iterable[Entry] = (),
    defer: bool = False,
) -> RangeAlignment:
    """Like `align`, but stop reading the target once every source entry of the range is placed, and carry the
    recently verified entries over from the previous range (so a replay across the boundary is a duplicate).
    `source` may go on past `frame.source_to` (the records copied next): a target record equal to one of them
    ends the range, so a range the target lacks is missing and the next range starts at the right place.
    With `defer`, a tail the target does not hold yet (it ran out first) is left to the next range instead of
    being missing: a transaction's markers may land on the target a moment after the mirror's progress."""
    aligner = _Aligner(source, frame, locate, window, recent, bounded=True)
    next_target: int | None = None
    next_source = frame.source_to
    placed = aligner.done()
    if not placed:
        for block in target:
            stopped = aligner.place(block, ranged=True)
            if stopped is not None:
                next_target = stopped
                placed = True
                break
            if block.offsets():
                next_target = block.offsets()[-1] + 1
    if not placed and defer:
        next_source, waiting = aligner.defer_tail()
        next_target = waiting if waiting is not None else next_target
    return RangeAlignment(aligner.finish(), next_target, aligner.recent, next_source)


def align(
    source: Iterable[Block],
    target: Iterable[Block],
    frame: Frame,
    *,
    locate: Locate = lambda _offset: None,
    window: int = WINDOW_DEFAULT,
    later: Collection[int] | None = None,
) -> Alignment:
    """Compare `source` (entries from `frame.source_from` to `frame.source_to`) with `target`, both in order.

    `later`: when the range ends at the source's end, the digests of the records the source gained since (the
    mirror may have copied them before the target's end was read); a target record the syncs place after the
    range that is none of them is unexpected. None: the range ends before the source does, what follows is
    outside the check."""
    aligner = _Aligner(source, frame, locate, window, later=later)
    for block in target:
        aligner.place(block)
    return aligner.finish()
