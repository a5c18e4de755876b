"""The verifier on a flow with transforms and provenance: each target record is compared with what the flow's rules
(`shared/reshape`, data-mirror's own) make of its source record. A record the chain drops is expected absent and
counted, not missing; a changed one is compared changed; a loss, an alteration, a duplicate or a foreign record is
still found by its offset. Target copies here are written out by hand, as data-mirror should write them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import pytest

from shared.config.transforms import PredicateSpec, TransformSpec
from shared.kafka.byte_headers import write_batch
from shared.kafka.record_batches import SourceBatch
from shared.kafka.record_digests import BatchBlock, ReadCounter
from shared.records.offset_sync import OffsetSync
from shared.replication_policy import IdentityReplicationPolicy
from shared.reshape.effect import ChainEffect
from shared.reshape.reshaper import Reshaper
from shared.verify.align import Alignment, Frame, align
from shared.verify.expected import ChainStopped, ExpectedSource, NotCopied, PartitionPair
from shared.verify.findings import AlteredRecord, OffsetRange
from shared.verify.flow_check import VerifyScope, _PartitionCheck
from shared.verify.sync_index import SyncIndex
from tests.unit.shared.kafka.test_record_digests import _at, _forwarded
from tests.unit.shared.reshape.test_transforms import _module

Headers = list[tuple[str, bytes | None]]
Row = tuple[int, bytes | None, bytes | None, Headers]  # timestamp, key, value, headers

PAIR = PartitionPair("orders", "A.orders", 0)
TOMBSTONE = PredicateSpec("tombstone", "is_tombstone")
SECRET = PredicateSpec("secret", "has_header_key", "secret")
DROP_TOMBSTONES = TransformSpec("dropTombstones", "filter", TOMBSTONE)
STRIP = TransformSpec("strip", "drop_headers", SECRET, headers=("secret",))
TAG = TransformSpec("tag", "insert_header", header="origin", value=b"eu")
CHAIN = (DROP_TOMBSTONES, STRIP, TAG)
TOMBSTONES = (3, 4)
SECRETS = (7,)


def _batch(base: int, rows: Sequence[Row]) -> SourceBatch:
    return _at(base, write_batch(list(rows), 0))


def _source_rows(count: int = 10) -> list[Row]:
    """Record i: key k<i>, value v<i> (None: a tombstone at 3 and 4), header h, and `secret` at 7."""
    rows: list[Row] = []
    for i in range(count):
        headers: Headers = [("secret", b"s"), ("h", b"x")] if i in SECRETS else [("h", b"x")]
        rows.append((1_000 + i, f"k{i}".encode(), None if i in TOMBSTONES else f"v{i}".encode(), headers))
    return rows


def _copy(i: int) -> Row:
    """What the chain makes of source record i: `secret` gone, `origin` added last."""
    return 1_000 + i, f"k{i}".encode(), f"v{i}".encode(), [("h", b"x"), ("origin", b"eu")]


KEPT = [i for i in range(10) if i not in TOMBSTONES]


def _plain(count: int) -> list[Row]:
    """Records 0..count-1: key k<i>, value v<i>, no headers."""
    return [(1_000 + i, f"k{i}".encode(), f"v{i}".encode(), []) for i in range(count)]


def python_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, function: str
) -> tuple[TransformSpec, ...]:
    """A chain of one Python transform, `module:function`, its module written from `source`."""
    _module(tmp_path, monkeypatch, module, source)
    return (TransformSpec(function, "python", function=f"{module}:{function}"),)


def _check(
    source: Iterable[SourceBatch],
    target: Iterable[SourceBatch],
    *,
    chain: Sequence[TransformSpec] = CHAIN,
    reshaper: Reshaper | None = None,
    end: int = 10,
    pair: PartitionPair = PAIR,
) -> tuple[Alignment, ExpectedSource]:
    expected = ExpectedSource(reshaper or Reshaper("A", "B", chain), pair)
    counter = ReadCounter()
    found = align(
        expected.blocks(BatchBlock(batch, 0, end, counter) for batch in source),
        expected.target(BatchBlock(batch, 0, 10**9, counter) for batch in target),
        Frame(log_start=0, source_from=0, source_to=end, copied_to=end),
    )
    return found, expected


def _counts(found: Alignment) -> tuple[int, int, int, int, int]:
    return found.verified, found.missing.records, found.altered_records, found.duplicates, found.unexpected


def test_a_copy_the_chain_made_verifies_and_its_dropped_records_are_counted_not_missing() -> None:
    found, expected = _check([_batch(0, _source_rows())], [_batch(0, [_copy(i) for i in KEPT])])
    assert _counts(found) == (8, 0, 0, 0, 0)
    assert (expected.not_copied.dropped, expected.not_copied.returned) == (2, 0)
    unchecked, _ = _check([_batch(0, _source_rows())], [_batch(0, [_copy(i) for i in KEPT])], chain=())
    assert unchecked.missing.records + unchecked.altered_records == 10, "compared as they are, all 10 differ"


@pytest.mark.parametrize("batches", [1, 2, 5], ids=lambda n: f"{n} source batches")
def test_records_lost_on_the_target_are_missing_by_source_offset_across_the_gaps_dropped_records_leave(
    batches: int,
) -> None:
    """Copies of 2, 5 and 9 deleted: 2 and 5 lie on either side of the dropped tombstones (one range of two records:
    nothing the target owes lies between them), 9 at the end."""
    rows = _source_rows()
    size = 10 // batches
    source = [_batch(base, rows[base : base + size]) for base in range(0, 10, size)]
    target = [_batch(0, [_copy(i) for i in KEPT if i not in (2, 5, 9)])]
    found, expected = _check(source, target)
    assert _counts(found) == (5, 3, 0, 0, 0)
    assert found.missing.finish() == [OffsetRange(2, 5, 2), OffsetRange(9, 9, 1)]
    assert expected.not_copied.dropped == 2


def test_a_copy_altered_on_the_target_or_left_as_its_source_was_is_altered_by_both_offsets() -> None:
    """The copy of 8 (target offset 6) holds another value; the copy of 7 kept `secret` (the chain not applied)."""
    copies = [_copy(i) for i in KEPT]
    copies[6] = (1_008, b"k8", b"changed", [("h", b"x"), ("origin", b"eu")])
    copies[5] = (1_007, b"k7", b"v7", [("secret", b"s"), ("h", b"x"), ("origin", b"eu")])
    found, _ = _check([_batch(0, _source_rows())], [_batch(0, copies)])
    assert _counts(found) == (6, 0, 2, 0, 0)
    assert found.altered == [AlteredRecord(7, 5), AlteredRecord(8, 6)]


def test_a_record_the_chain_drops_found_on_the_target_is_unexpected_and_a_replay_is_a_duplicate() -> None:
    copies = [_copy(i) for i in KEPT]
    tombstone: Row = (1_003, b"k3", None, [("h", b"x"), ("origin", b"eu")])
    target = [*copies[:3], tombstone, *copies[3:], copies[6], copies[7]]  # after 2; then 8 and 9 again
    found, _ = _check([_batch(0, _source_rows())], [_batch(0, target)])
    assert _counts(found) == (8, 0, 0, 2, 1)
    assert found.unexpected_offsets == [3]
    assert found.duplicate_offsets == [9, 10]


def test_a_batch_the_chain_leaves_as_it_is_is_verified_from_its_bytes_on_the_target(digested: list[int]) -> None:
    """No tombstone and no `secret` in the first batch: the chain changes none of its records, data-mirror forwards
    it, and its copy is verified without reading it; the second batch's copy (a tombstone dropped) is read."""
    plain = _batch(0, [(1_000 + i, f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")]) for i in range(5)])
    with_tombstone = _batch(5, [(1_005, b"k5", None, []), (1_006, b"k6", b"v6", [])])
    target = [_forwarded(plain, 0), _batch(5, [(1_006, b"k6", b"v6", [])])]
    found, expected = _check([plain, with_tombstone], target, chain=(DROP_TOMBSTONES, STRIP), end=7)
    assert expected.effect is ChainEffect.READS
    assert _counts(found) == (6, 0, 0, 0, 0)
    assert expected.not_copied.dropped == 1
    assert 0 not in digested, "the forwarded copy and its source were not digested batch-wise"
    assert digested == [5], "only the re-encoded copy is read"


def test_a_partition_the_chain_leaves_alone_or_drops_whole_is_never_decoded(digested: list[int]) -> None:
    """TopicNameMatches decides per remote topic: `payments` only is filtered; A.orders is compared as it is."""
    payments = TransformSpec("dropPayments", "filter", PredicateSpec("p", "topic_matches", r"A\.payments"))
    rows = _plain(10)
    source = _batch(0, rows)
    found, expected = _check([source], [_forwarded(source, 0)], chain=(payments,))
    assert expected.effect is ChainEffect.NONE
    assert _counts(found) == (10, 0, 0, 0, 0)

    assert digested == [0], "the source's digests (for the replay window); its forwarded copy is not read"

    pay = PartitionPair("payments", "A.payments", 0)
    found, expected = _check([source], [], chain=(payments,), pair=pay)
    assert expected.effect is ChainEffect.DROPS_ALL
    assert (_counts(found), expected.not_copied.dropped) == ((0, 0, 0, 0, 0), 10)
    assert digested == [0], "a partition dropped whole: its records are counted, not read"
    found, _ = _check([source], [_batch(0, rows[:1])], chain=(payments,), pair=pay)
    assert found.unexpected == 1, "a record of a topic the flow drops whole is foreign on its remote topic"


def test_with_provenance_records_from_the_target_are_returned_and_copies_are_compared_stamped() -> None:
    """A->B with provenance: 1 came from B (returned, not missing); the others' copies carry their origin."""
    rows = _plain(4)
    rows[1] = (1_001, b"k1", b"v1", [("strait.provenance", b"B:orders:0:40")])
    stamped: list[Row] = [
        (1_000 + i, f"k{i}".encode(), f"v{i}".encode(), [("strait.provenance", f"A:orders:0:{i}".encode())])
        for i in (0, 2, 3)
    ]
    reshaper = Reshaper("A", "B", (), provenance=True)
    found, expected = _check([_batch(0, rows)], [_batch(0, stamped)], reshaper=reshaper, end=4)
    assert _counts(found) == (3, 0, 0, 0, 0)
    assert (expected.not_copied.returned, expected.not_copied.dropped, expected.target_own) == (1, 0, 0)

    found, _ = _check([_batch(0, rows)], [_batch(0, [*stamped[:1], rows[1], *stamped[1:]])], reshaper=reshaper, end=4)
    assert found.unexpected == 1, "on A.orders (a prefixed remote topic) a record copied back is foreign"


def test_active_active_under_identity_names_compares_only_the_flows_copies() -> None:
    """`orders` on B holds B's own records (no header) and records copied there from C, between A->B's copies."""
    reshaper = Reshaper("A", "B", (), provenance=True, policy=IdentityReplicationPolicy())
    rows = _plain(3)
    copies: list[Row] = [
        (1_000 + i, f"k{i}".encode(), f"v{i}".encode(), [("strait.provenance", f"A:orders:0:{i}".encode())])
        for i in range(3)
    ]
    own: Row = (5, b"b-own", b"x", [])
    from_c: Row = (6, b"c", b"y", [("strait.provenance", b"C:orders:0:9")])
    target = [_batch(0, [own, copies[0], from_c]), _batch(3, copies[1:])]
    identity = PartitionPair("orders", "orders", 0)
    found, expected = _check([_batch(0, rows)], target, reshaper=reshaper, end=3, pair=identity)
    assert _counts(found) == (3, 0, 0, 0, 0)
    assert expected.target_own == 2
    lost = [_batch(0, [own, copies[0], from_c, copies[2]])]
    found, _ = _check([_batch(0, rows)], lost, reshaper=reshaper, end=3, pair=identity)
    assert (found.missing.finish(), found.unexpected) == ([OffsetRange(1, 1, 1)], 0)


FAILING = """
def mask(record):
    if record.value == b"v5":
        raise ValueError("cannot mask v5")
    record.value = record.value.upper()
    return record
"""


def test_a_transform_that_fails_stops_the_expected_records_at_the_record_it_failed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = python_chain(tmp_path, monkeypatch, "failing_masks", FAILING, "mask")
    rows = _plain(10)
    expected = ExpectedSource(Reshaper("A", "B", chain), PAIR)
    blocks = expected.blocks([BatchBlock(_batch(0, rows[:3]), 0, 10, ReadCounter()), _block(3, rows[3:])])
    assert [list(block.offsets()) for block in (next(blocks), next(blocks))] == [[0, 1, 2], [3, 4]]
    with pytest.raises(ChainStopped) as stopped:
        next(blocks)
    assert stopped.value.offset == 5
    assert "transform mask (failing_masks:mask) raised ValueError: cannot mask v5" in str(stopped.value)

    past_the_range = ExpectedSource(Reshaper("A", "B", chain), PAIR, range_end=5)
    seen = [list(b.offsets()) for b in past_the_range.blocks([_block(0, rows)])]
    assert seen == [[0, 1, 2, 3, 4]], "read only to find where the range's copies end: the blocks end there"


def _block(base: int, rows: Sequence[Row]) -> BatchBlock:
    return BatchBlock(_batch(base, rows), 0, 10**9, ReadCounter())


class _Entries:
    """PartitionEntries over batches held in memory."""

    def __init__(self, batches: dict[tuple[str, int], list[SourceBatch]]) -> None:
        self.batches = batches
        self.counter = ReadCounter()

    def blocks(self, topic: str, partition: int, start: int, end: int) -> Iterator[BatchBlock]:
        for batch in self.batches.get((topic, partition), []):
            if batch.last_offset >= start and batch.base_offset < end:
                yield BatchBlock(batch, start, end, self.counter)


@pytest.mark.parametrize("copied_to", [5, 10], ids=["mirror waits there", "mirror went past"])
def test_verify_compares_up_to_the_record_a_transform_fails_on_and_names_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copied_to: int
) -> None:
    """The mirror stops at a record its transform fails on: the records after it are not yet copied. Where the
    mirror went past it (a transform that failed only in verify), they are named unverified, not lost."""
    chain = python_chain(tmp_path, monkeypatch, "failing_masks", FAILING, "mask")
    rows = _plain(10)
    copies: list[Row] = [(ts, key, (value or b"").upper(), headers) for ts, key, value, headers in rows]
    source = _Entries({("orders", 0): [_batch(0, rows[:4]), _batch(4, rows[4:])]})
    target = _Entries({("A.orders", 0): [_batch(0, copies[:copied_to])]})
    syncs = SyncIndex()
    syncs.add(OffsetSync("orders", 0, 0, 0))
    check = _PartitionCheck("orders", 0, "A.orders", (0, 10), 10)
    found = check.run(
        source,  # type: ignore[arg-type]
        target,  # type: ignore[arg-type]
        VerifyScope(),
        (0, copied_to),
        syncs,
        {("orders", 0): copied_to},
        Reshaper("A", "B", chain),
    )
    assert (found.verified, found.lost, found.unexpected, found.duplicates) == (5, 0, 0, 0)
    assert found.transform_failure is not None
    assert found.transform_failure.startswith("source offset 5: transform mask")
    assert (found.not_yet_copied, found.unverified) == ((5, 0) if copied_to == 5 else (0, 5))


COUNTING = """
calls = [0]


def stamp(record):
    calls[0] += 1
    record.value = record.value + b"-" + str(calls[0]).encode()
    return record
"""


def test_a_transform_that_answers_differently_each_time_shows_as_altered_records_named_by_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What verify cannot prove: the copy data-mirror made (its first calls) is not what the transform makes now."""
    chain = python_chain(tmp_path, monkeypatch, "counting_stamps", COUNTING, "stamp")
    rows = _plain(3)
    # made by data-mirror's process, whose calls had counted on: the transform gives other values now
    made_then: list[Row] = [(ts, k, (v or b"") + f"-{n}".encode(), h) for n, (ts, k, v, h) in enumerate(rows, 41)]
    found, _ = _check([_batch(0, rows)], [_batch(0, made_then)], chain=chain, end=3)
    assert (found.verified, found.altered_records) == (0, 3)
    assert found.altered == [AlteredRecord(0, 0), AlteredRecord(1, 1), AlteredRecord(2, 2)]


def test_records_not_copied_are_counted_below_an_offset_where_their_offsets_are_kept() -> None:
    kept = NotCopied(keep_offsets=True)
    kept.add([3, 4, 9], [5])
    kept.add(range(20, 30), [])
    assert (kept.dropped, kept.returned) == (13, 1)
    assert kept.below(5) == (2, 0)
    assert kept.below(25) == (8, 1)
    counted = NotCopied()
    counted.add([3, 4], [5])
    assert counted.below(0) == (2, 1), "without offsets every one counts"
