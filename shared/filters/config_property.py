"""Config property filter: which topic configs are synced (MM2's ConfigPropertyFilter and its Default)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from shared.errors import ConfigError
from shared.filters._patterns import compile_pattern_list, full_match

CONFIG_PROPERTIES_EXCLUDE_DEFAULT: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)
USE_DEFAULTS_FROM_DEFAULT = "target"
_USE_DEFAULTS_FROM_VALUES = ("source", "target")


@runtime_checkable
class ConfigPropertyFilter(Protocol):
    """Decides which topic configuration properties are copied to the remote topic."""

    def should_replicate_config_property(self, name: str) -> bool:
        """True if property `name` is synced at all."""
        ...

    def should_replicate_source_default(self, name: str) -> bool:
        """For a property that has its default value on the source: True to SET the source's default
        on the target, False to DELETE it there so the target's own default applies.

        Only asked about properties that `should_replicate_config_property` accepted.
        """
        ...


class DefaultConfigPropertyFilter:
    """`config.properties.exclude` (full-match regex list) and `use.defaults.from` (`source` or `target`)."""

    def __init__(
        self,
        exclude: Sequence[str] = CONFIG_PROPERTIES_EXCLUDE_DEFAULT,
        use_defaults_from: str = USE_DEFAULTS_FROM_DEFAULT,
    ) -> None:
        self._exclude = compile_pattern_list(exclude, key="config.properties.exclude")
        if use_defaults_from not in _USE_DEFAULTS_FROM_VALUES:
            # MM2 silently treats anything but "source" as "target"; a typo there deletes configs, so refuse it.
            raise ConfigError(
                f"use.defaults.from must be one of {', '.join(_USE_DEFAULTS_FROM_VALUES)}, got {use_defaults_from!r}",
                key="use.defaults.from",
                value=use_defaults_from,
            )
        self._use_source_defaults = use_defaults_from == "source"

    def should_replicate_config_property(self, name: str) -> bool:
        """True unless `name` fully matches an exclude pattern."""
        return not full_match(self._exclude, name)

    def should_replicate_source_default(self, name: str) -> bool:
        """True when `use.defaults.from=source`, whatever the property."""
        return self._use_source_defaults
