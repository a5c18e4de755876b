"""Read a checkpoints topic as RemoteClusterUtils does: the latest checkpoint per group and remote partition."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from shared.errors import CodecError
from shared.records.checkpoint import Checkpoint
from tests.support.kafka_io import read_to_end

# group -> (remote topic, partition) -> downstream offset
GroupCheckpoints = dict[str, dict[tuple[str, int], int]]


def latest_checkpoints(props: Mapping[str, str], topic: str, groups: Collection[str]) -> GroupCheckpoints:
    """The newest checkpoint (in log order) of each of `groups` per remote partition; undecodable records skipped."""
    wanted = set(groups)
    found: GroupCheckpoints = {}
    for record in sorted(read_to_end(props, topic, timeout_s=60), key=lambda r: r.offset):
        if record.key is None or record.value is None:
            continue
        try:
            checkpoint = Checkpoint.decode(record.key, record.value)
        except CodecError:
            continue
        if checkpoint.group in wanted:
            found.setdefault(checkpoint.group, {})[(checkpoint.topic, checkpoint.partition)] = (
                checkpoint.downstream_offset
            )
    return found
