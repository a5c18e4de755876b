"""Compile MM2-style regex lists: entries joined with `|`, read as Java reads them (`java_regex`), full-match
only, empty list matches nothing."""

from __future__ import annotations

import re
from collections.abc import Sequence

from shared.errors import ConfigError
from shared.filters.java_regex import JavaRegexError, compile_java


def compile_pattern_list(entries: Sequence[str], *, key: str) -> re.Pattern[str] | None:
    """Join `entries` with `|` as MM2 does; None (matches nothing) for an empty list.

    `key` names the configuration property in the ConfigError raised for an invalid regex.
    """
    if isinstance(entries, str):
        # A bare string would be joined character by character; catch it before it silently misbehaves.
        raise ConfigError(f"{key} must be a list of patterns, not a string", key=key, value=entries)
    if not entries:
        return None
    joined = "|".join(entries)  # joined before reading: a Java inline flag runs on into the later entries
    try:
        return compile_java(joined)
    except (re.error, JavaRegexError) as exc:
        raise ConfigError(f"{key}: invalid regular expression {joined!r}: {exc}", key=key, value=joined) from exc


def full_match(pattern: re.Pattern[str] | None, name: str) -> bool:
    """True when `pattern` exists and matches all of `name` (Java's Matcher.matches)."""
    return pattern is not None and pattern.fullmatch(name) is not None
