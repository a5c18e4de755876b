"""Which configuration keys hold secrets, and how a key and its value appear in an error message."""

from __future__ import annotations

import re

REDACTED = "<redacted>"

# A word anywhere in the key marks it secret (sasl.jaas.config, ssl.keystore.password, ...).
_SECRET_WORDS = ("password", "passwd", "secret", "jaas", "token", "credential", "private", "userinfo", "user.info")
# The last dotted part names a key (ssl.keystore.key, api.key, apikey) rather than e.g. key.converter.
_SECRET_LAST_PARTS = ("key", "apikey", "api-key", "api_key", "accesskey", "privatekey")
_MAX_SHOWN = 120


def is_sensitive_key(key: str) -> bool:
    """True when the value of `key` may be a secret and must never be shown or logged."""
    lowered = key.lower()
    if any(word in lowered for word in _SECRET_WORDS):
        return True
    return re.split(r"[.]", lowered)[-1] in _SECRET_LAST_PARTS


def shown_value(key: str, value: str) -> str:
    """`value` as a message may show it: quoted and shortened, or `<redacted>` for a secret key."""
    if is_sensitive_key(key):
        return REDACTED
    if len(value) > _MAX_SHOWN:
        value = value[:_MAX_SHOWN] + "..."
    return repr(value)


def describe(key: str, value: str) -> str:
    """`key='value'` (or `key=<redacted>`), the way every value error starts."""
    return f"{key}={shown_value(key, value)}"


def one_line(text: str) -> str:
    """`text` with every non-printable character (newline, escape, ...) escaped, so a message stays one line."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
