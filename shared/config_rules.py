"""Which configs a remote topic gets (MM2's targetConfig) and the incremental alter ops that get it there.

MM2's rules: an entry is synced only if it is not read-only, not sensitive, not from the static broker
config and not excluded by `config.properties.exclude`. A new remote topic gets the source's non-default
entries (plus its defaults when `use.defaults.from=source`). On sync, a source entry at its default is
DELETEd on the target (the target's own default applies) unless `use.defaults.from=source`, which SETs it;
every other entry is SET. Strait then skips the ops that would change nothing on the target, and never
touches a property the source did not describe or the filter excludes (throttles stay as the target set them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from shared.filters import ConfigPropertyFilter
from shared.kafka.topic_admin import STATIC_BROKER_CONFIG, ConfigEntrySpec, ConfigOp


def syncable(entry: ConfigEntrySpec, config_filter: ConfigPropertyFilter) -> bool:
    """True for an entry MM2 may copy at all."""
    if entry.read_only or entry.sensitive or entry.source == STATIC_BROKER_CONFIG:
        return False
    return config_filter.should_replicate_config_property(entry.name)


def creation_configs(entries: Iterable[ConfigEntrySpec], config_filter: ConfigPropertyFilter) -> dict[str, str]:
    """Configs for a new remote topic: syncable non-default entries, and defaults if the filter keeps them."""
    configs: dict[str, str] = {}
    for entry in entries:
        if entry.value is None or not syncable(entry, config_filter):
            continue
        if entry.is_default and not config_filter.should_replicate_source_default(entry.name):
            continue
        configs[entry.name] = entry.value
    return configs


def alter_ops(
    source: Iterable[ConfigEntrySpec], target: Iterable[ConfigEntrySpec], config_filter: ConfigPropertyFilter
) -> list[ConfigOp]:
    """The ops that make the remote topic's configs follow the source's, in source order; [] if in sync."""
    current: Mapping[str, ConfigEntrySpec] = {entry.name: entry for entry in target}
    ops: list[ConfigOp] = []
    for entry in source:
        if not syncable(entry, config_filter):
            continue
        there = current.get(entry.name)
        if there is not None and there.read_only:
            continue
        if entry.is_default and not config_filter.should_replicate_source_default(entry.name):
            # Use the target's default: only a topic-level override on the target needs removing.
            if there is not None and there.set_on_topic:
                ops.append(ConfigOp(entry.name, "DELETE"))
            continue
        if entry.value is None:
            continue
        if there is None or not there.set_on_topic or there.value != entry.value:
            ops.append(ConfigOp(entry.name, "SET", entry.value))
    return ops
