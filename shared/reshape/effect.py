"""What a flow's transforms and provenance do to one partition's records as a whole, decided once from its remote
topic: nothing (its batches are never decoded), everything dropped (none is decoded), or each record read.

data-mirror's forwarding decision (`services/data_mirror/forwarding.py`) asks it for a partition's batches, and the
verifier for which source records it compares as they are.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from shared.config.transforms import TransformSpec


class ChainEffect(enum.Enum):
    """What the flow's transforms and provenance do to one partition's batches."""

    NONE = "none"  # nothing applies to its remote topic: batches go as they are, never decoded
    DROPS_ALL = "drops all"  # a Filter drops every record: nothing is decoded or sent
    READS = "reads"  # each batch's records go through the chain first


def chain_effect(steps: Sequence[TransformSpec], *, provenance: bool) -> ChainEffect:
    """The effect of `steps`, the chain as it applies to the partition's remote topic (`transforms.for_topic`:
    TopicNameMatches decided), and of provenance headers (every record is checked and stamped)."""
    if provenance:
        return ChainEffect.READS
    for spec in steps:
        if spec.kind == "python":
            return ChainEffect.READS  # called for each record, which it may fail on, before any later Filter
        if spec.kind == "filter" and spec.predicate is None:
            return ChainEffect.DROPS_ALL
    return ChainEffect.READS if steps else ChainEffect.NONE
