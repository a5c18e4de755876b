"""The alignment's block reading: a source read an entry or a run at a time, and the window of recent entries."""

from __future__ import annotations

import random
from collections import deque

import pytest

from shared.verify.blocks import Entry, RecentWindow, SourceCursor, blocks_of


@pytest.mark.parametrize("size", [0, 1, 3, 50])
def test_the_recent_window_holds_exactly_the_newest_entries_however_they_were_added(size: int) -> None:
    rng = random.Random(size)
    window, model = RecentWindow(size), deque[Entry](maxlen=size)
    offset = 0
    for _ in range(3_000):
        run = [Entry(offset + i, rng.randrange(2_000)) for i in range(rng.choice([1, 1, 2, 7, 60]))]
        offset += len(run) + rng.choice([0, 0, 3])
        if len(run) == 1:
            window.add(*run[0])
        else:
            window.extend([e.offset for e in run], [e.digest for e in run])
        model.extend(run)
        if rng.random() < 0.3:
            asked = rng.randrange(2_000)
            assert (asked in window) == any(e.digest == asked for e in model)
    assert list(window.entries()) == list(model)


def test_a_run_is_taken_across_blocks_up_to_the_first_difference_or_the_end_given() -> None:
    entries = [Entry(offset, 100 + offset) for offset in range(20)]
    cursor = SourceCursor(blocks_of(entries, 6))
    assert cursor.next() == Entry(0, 100)
    offsets, digests = cursor.take_run([101, 102, 103, 104, 105, 106, 107, 999], 0, below=100)
    assert (offsets, digests) == ([1, 2, 3, 4, 5, 6, 7], [101, 102, 103, 104, 105, 106, 107])
    assert cursor.peek() == Entry(8, 108)
    assert cursor.take_run(list(range(108, 120)), 0, below=15) == (list(range(8, 15)), list(range(108, 115)))
    assert cursor.block_ahead() is None  # 15 is inside the block 12..17
    assert cursor.take_block() == ([15, 16, 17], [115, 116, 117])
    assert cursor.block_ahead() is not None
