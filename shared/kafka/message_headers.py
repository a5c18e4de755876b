"""A confluent-kafka message's headers, read so that a header key that is not UTF-8 raises instead of crashing.

Kafka allows any bytes as a header key; confluent-kafka takes keys for UTF-8 text. On a key that is not, its C code
returns a half-built list (the key a NULL pointer) with a UnicodeDecodeError set. Called straight from Python code,
CPython 3.11's specialised call of a C method does not check for that error once the call site is warm: the list
comes back as if valid, touching it kills the process, and the error surfaces later somewhere else (seen in a copy
task on a real broker: the Spark worker died with a segmentation fault while sizing the record). Called through a C
callable (`operator.methodcaller`), the result is checked and the error raised every time.
"""

from __future__ import annotations

import operator
from typing import Any

_checked_headers = operator.methodcaller("headers")


class HeaderKeyNotUtf8(ValueError):
    """A record's header key is not UTF-8: confluent-kafka cannot read (nor write) it."""


def message_headers(message: Any) -> list[tuple[str, bytes | None]] | None:
    """`message.headers()`, or `HeaderKeyNotUtf8` when a key is not UTF-8 (never the half-built list)."""
    try:
        headers: list[tuple[str, bytes | None]] | None = _checked_headers(message)
    except UnicodeDecodeError as exc:
        raise HeaderKeyNotUtf8(str(exc)) from exc
    except SystemError as exc:
        if isinstance(exc.__cause__, UnicodeDecodeError):
            raise HeaderKeyNotUtf8(str(exc.__cause__)) from exc
        raise
    return headers
