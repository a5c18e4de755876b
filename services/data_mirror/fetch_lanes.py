"""Which partitions the batch copier fetches now, and in which lane (one fetch session of a source leader).

Kept between rounds: a round looks only at the partitions touched since the last one (answered, landed, held,
released), so a task with thousands of quiet partitions does not weigh each of them again for every fetch its few
busy ones make. Every partition is looked at after the metadata, a round trip or the target's readiness changed,
and every LOOK_AGAIN_S in any case (a change no event told of: aiokafka refreshing its metadata by itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from shared.partition_key import PartitionKey

FetchKey = tuple[int, int]  # (source leader, fetch lane)
NO_LEADER: FetchKey = (-1, -1)  # what a lane look-up answers while the partition's leader is not known
LOOK_AGAIN_S = 0.5


class FetchLanes:
    """Each fetchable partition in its lane; the partitions looked at with no leader known."""

    def __init__(self) -> None:
        self.assign(())

    def assign(self, keys: Iterable[PartitionKey]) -> None:
        self.order = {key: index for index, key in enumerate(sorted(keys))}  # spreads partitions over lanes
        self.lane_of: dict[PartitionKey, FetchKey] = {}
        self.members: dict[FetchKey, dict[PartitionKey, None]] = {}
        self.leaderless: set[PartitionKey] = set()
        self.distance = 1  # the most lanes of a source leader fetched from, as of the last full look
        self._touched: set[PartitionKey] = set()
        self._rotations: dict[FetchKey, int] = {}  # per lane: which of its partitions its next fetch names first
        self.next_full_look = 0.0  # when every partition is looked at again
        self._looked_at: tuple[int, ...] = ()

    def touch(self, *keys: PartitionKey) -> None:
        """Something happened to `keys` that may change whether and where they are fetched: the next look sees."""
        self._touched.update(keys)

    def lane(self, key: PartitionKey, node: int, lanes: int) -> FetchKey:
        """`key`'s lane at leader `node`, fetched in `lanes` sessions at once."""
        return (node, self.order.get(key, 0) % lanes)

    def look(
        self,
        now: float,
        seen: tuple[int, ...],
        keys: Iterable[PartitionKey],
        lane_now: Callable[[PartitionKey], FetchKey | None],
        lanes_of: Callable[[int], int],
    ) -> None:
        """Place the partitions again: every one of `keys` when `seen` (the clients' change counts) moved or
        LOOK_AGAIN_S passed, else those touched. `lane_now` answers a lane, None (not fetched now) or NO_LEADER."""
        full = seen != self._looked_at or now >= self.next_full_look
        looked: Iterable[PartitionKey]
        if full:
            self._looked_at, self.next_full_look = seen, now + LOOK_AGAIN_S
            looked, self._touched = list(keys), set()
        else:
            looked, self._touched = self._touched, set()
        leaders: set[int] = set()
        for key in looked:
            lane = lane_now(key)
            if lane == NO_LEADER:
                self.leaderless.add(key)
                lane = None
            else:
                self.leaderless.discard(key)
                if full and lane is not None:
                    leaders.add(lane[0])
            self._place(key, lane)
        if leaders:  # (a full look with none fetchable, all held: the last distance stands)
            self.distance = max(lanes_of(node) for node in leaders)

    def next_fetch(self, lane: FetchKey, positions: Mapping[PartitionKey, int]) -> dict[PartitionKey, int]:
        """The positions of `lane`'s partitions for its next fetch, a different partition first each time: only
        the first partition with data gets a batch larger than max.partition.fetch.bytes whole, so a fixed order
        could starve a later partition's large batch."""
        keys = list(self.members[lane])
        self._rotations[lane] = self._rotations.get(lane, -1) + 1
        first = self._rotations[lane] % len(keys)
        return {key: positions[key] for key in keys[first:] + keys[:first]}

    def _place(self, key: PartitionKey, lane: FetchKey | None) -> None:
        old = self.lane_of.get(key)
        if old == lane:
            return
        if old is not None:
            del self.members[old][key]
        if lane is None:
            del self.lane_of[key]
        else:
            self.lane_of[key] = lane
            self.members.setdefault(lane, {})[key] = None
