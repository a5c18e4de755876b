"""Environment overrides: `STRAIT_CONFIG_OVERRIDES` entries replace or add keys of the config file.

Entries are `key=value`, separated by newlines or `;` (write `\\;` for a literal semicolon, e.g. at
the end of a JAAS line). Blank entries and lines starting with `#` are skipped; key and value are
trimmed; a later entry for the same key wins. Overrides apply before `${...}` references resolve,
so an override may itself be a reference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from shared.config.redaction import REDACTED, is_sensitive_key
from shared.errors import ConfigError

OVERRIDES_ENV = "STRAIT_CONFIG_OVERRIDES"


def parse_overrides(text: str) -> dict[str, str]:
    """Parse the override entries in `text` into an ordered dict."""
    overrides: dict[str, str] = {}
    for number, entry in enumerate(_entries(text), start=1):
        stripped = entry.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, separator, value = stripped.partition("=")
        key = key.strip()
        if not separator or not key:
            raise _malformed(number, stripped, "expected key=value")
        if any(char.isspace() for char in key):
            raise _malformed(number, stripped, "the key contains whitespace; expected key=value")
        overrides[key] = value.strip()
    return overrides


def apply_overrides(props: Mapping[str, str], env: Mapping[str, str]) -> dict[str, str]:
    """Return `props` updated by the entries of `env[STRAIT_CONFIG_OVERRIDES]`, if set."""
    merged = dict(props)
    merged.update(parse_overrides(env.get(OVERRIDES_ENV, "")))
    return merged


def _entries(text: str) -> list[str]:
    """Split on newlines and unescaped `;`; `\\;` becomes `;`."""
    entries: list[str] = []
    current: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char == "\\" and text[position + 1 : position + 2] == ";":
            current.append(";")
            position += 2
            continue
        if char in "\n\r;":
            entries.append("".join(current))
            current = []
        else:
            current.append(char)
        position += 1
    entries.append("".join(current))
    return entries


def _malformed(number: int, entry: str, reason: str) -> ConfigError:
    # A malformed entry may still carry a secret (`ssl.key.password: x`): check every word of it.
    secret = any(is_sensitive_key(word) for word in re.split(r"[\s:=]+", entry))
    shown = REDACTED if secret else repr(entry)
    return ConfigError(f"{OVERRIDES_ENV} entry {number} {shown}: {reason}", key=OVERRIDES_ENV, value=shown)
