"""The translator's hot answer as bytes: a group's offsets document, rendered once per change of the group.

Only `checkpoint_age_ms` depends on the time of the request. Everything else of a group's document is encoded
once (by pydantic_core, like every other response) and kept until the index reports a newer version of the
group; a request then joins the cached pieces with the ages. Least recently asked groups are dropped once
more than `max_partitions` group-partitions are cached, so memory stays bounded however many groups there are.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import pydantic_core

from services.offset_translator.checkpoint_index import CheckpointIndex
from services.offset_translator.flows import ServedFlow

DEFAULT_MAX_PARTITIONS = 200_000
_AGE_FIELD = b',"checkpoint_age_ms":'


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A group's document cut around its ages: head, then per partition (entry up to the age, checkpoint time)."""

    version: int
    head: bytes
    entries: tuple[tuple[bytes, int], ...]


class GroupOffsetsJson:
    """Renders `queries.group_offsets_document` as JSON bytes, caching the parts that do not depend on time."""

    def __init__(self, checkpoints: CheckpointIndex, *, max_partitions: int = DEFAULT_MAX_PARTITIONS) -> None:
        self._checkpoints = checkpoints
        self._max_partitions = max_partitions
        self._cached_partitions = 0
        self._cache: OrderedDict[tuple[tuple[str, str], str], _Rendered] = OrderedDict()

    def render(self, flow: ServedFlow, group: str, now_ms: int) -> bytes | None:
        """The group's offsets document as JSON, or None if the group has no checkpoint on the flow."""
        key = (flow.key, group)
        version = self._checkpoints.version(flow.key, group)
        rendered = self._cache.get(key)
        if rendered is None or rendered.version != version:
            fresh = self._render(flow, group, version)
            if fresh is None:
                return None
            self._store(key, fresh, replaces=rendered)
            rendered = fresh
        else:
            self._cache.move_to_end(key)
        ages = [piece + str(now_ms - ts if now_ms > ts else 0).encode() + b"}" for piece, ts in rendered.entries]
        return rendered.head + b",".join(ages) + b"]}"

    def _render(self, flow: ServedFlow, group: str, version: int) -> _Rendered | None:
        checkpoints = self._checkpoints.sorted_group(flow.key, group)
        if checkpoints is None:
            return None
        head = {
            "group": group,
            "source": flow.source,
            "target": flow.target,
            "checkpoints_topic": flow.checkpoints_topic,
        }
        entries = tuple(
            (
                pydantic_core.to_json(
                    {
                        "topic": topic,
                        "partition": partition,
                        "offset": entry.checkpoint.downstream_offset,
                        "upstream_offset": entry.checkpoint.upstream_offset,
                        "metadata": entry.checkpoint.metadata,
                    }
                )[:-1]
                + _AGE_FIELD,
                entry.timestamp_ms,
            )
            for (topic, partition), entry in checkpoints
        )
        return _Rendered(version, pydantic_core.to_json(head)[:-1] + b',"offsets":[', entries)

    def _store(self, key: tuple[tuple[str, str], str], rendered: _Rendered, *, replaces: _Rendered | None) -> None:
        if replaces is not None:
            self._cached_partitions -= len(replaces.entries)
        self._cache[key] = rendered
        self._cache.move_to_end(key)
        self._cached_partitions += len(rendered.entries)
        while self._cached_partitions > self._max_partitions and len(self._cache) > 1:
            _, dropped = self._cache.popitem(last=False)
            self._cached_partitions -= len(dropped.entries)
