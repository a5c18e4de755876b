"""Typed value parsers with Kafka ConfigDef semantics; each failure is a one-line ConfigError.

Values are trimmed first, as Kafka's ConfigDef does for every typed property.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from shared.config.redaction import REDACTED, describe, is_sensitive_key, shown_value
from shared.errors import ConfigError
from shared.filters.java_regex import JavaRegexError, compile_java

LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
_INTEGER = re.compile(r"[+-]?[0-9]+")


def value_error(key: str, value: str, expected: str) -> ConfigError:
    """`key='value': expected ...`, with the value redacted when the key is secret."""
    shown: object = REDACTED if is_sensitive_key(key) else value
    return ConfigError(f"{describe(key, value)}: expected {expected}", key=key, value=shown)


def parse_bool(key: str, value: str) -> bool:
    """`true` or `false` in any letter case; anything else is an error (MM2 would read it as false)."""
    lowered = value.strip().lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    raise value_error(key, value, "true or false")


def parse_int(
    key: str,
    value: str,
    *,
    minimum: int = LONG_MIN,
    maximum: int = LONG_MAX,
    expected: str | None = None,
) -> int:
    """A base-10 integer (optional sign, no separators) within [minimum, maximum]."""
    text = value.strip()
    if _INTEGER.fullmatch(text) is None or not minimum <= int(text) <= maximum:
        raise value_error(key, value, expected or _range_text(minimum, maximum))
    return int(text)


def _range_text(minimum: int, maximum: int) -> str:
    if minimum == LONG_MIN and maximum == LONG_MAX:
        return "an integer"
    if maximum == LONG_MAX:
        return f"an integer >= {minimum}"
    return f"an integer from {minimum} to {maximum}"


def parse_choice(key: str, value: str, choices: Iterable[str], *, ignore_case: bool = False) -> str:
    """One of `choices` (returned in its canonical spelling)."""
    options = tuple(choices)
    text = value.strip()
    for option in options:
        if text == option or (ignore_case and text.lower() == option.lower()):
            return option
    raise value_error(key, value, " or ".join(options) if len(options) == 2 else "one of " + ", ".join(options))


def parse_list(value: str) -> tuple[str, ...]:
    """A comma-separated list of stripped, non-empty entries (ConfigDef LIST); blank gives ()."""
    return tuple(entry.strip() for entry in value.split(",") if entry.strip())


def parse_regex_list(key: str, value: str) -> tuple[str, ...]:
    """A comma list of regular expressions; each must compile, and so must their `|` join."""
    entries = parse_list(value)
    for entry in entries:
        problem = _regex_problem(entry)
        if problem is not None:
            shown = shown_value(key, entry)
            raise ConfigError(
                f"{describe(key, value)}: entry {shown} is not a valid regular expression ({problem})",
                key=key,
                value=value,
            )
    # Filters match the entries joined with `|`, which can fail where each entry alone does not.
    problem = _regex_problem("|".join(entries))
    if problem is not None:
        raise ConfigError(
            f"{describe(key, value)}: the entries joined with '|' are not a valid regular expression ({problem})",
            key=key,
            value=value,
        )
    return entries


def _regex_problem(pattern: str) -> str | None:
    """Why `pattern` does not compile as a Java pattern read in Python, or None. Also catches what `re` raises
    for patterns of hostile size."""
    try:
        compile_java(pattern)  # as MM2 reads it: java.util.regex
    except (re.error, JavaRegexError) as exc:
        return str(exc)
    except RecursionError:
        return "nested too deeply"
    except (OverflowError, MemoryError) as exc:
        return str(exc) or "too large"
    return None
