"""How much librdkafka's clients in this process log: a process whose stderr is a person's console asks for less."""

from __future__ import annotations

LIBRDKAFKA_NOTICE = 5  # syslog levels: librdkafka writes lines up to its `log_level` (6, info, by default)
_log_level: int | None = None


def quiet_client_info() -> None:
    """librdkafka clients this process builds from now on write no info lines (`log_level` notice): for a process
    whose stderr is a person's console (the demo, the `strait` command), where lines such as a destroyed client's
    "Purging 1 unserved events from background queue" say nothing to act on. Services keep them in their logs."""
    global _log_level
    _log_level = LIBRDKAFKA_NOTICE


def client_log_level() -> int | None:
    """The `log_level` this process's librdkafka clients get (None: librdkafka's default)."""
    return _log_level
