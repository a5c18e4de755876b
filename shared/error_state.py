"""The current error of one piece of work (a status publication, a heartbeat, a flow's open), logged when it
changes and once when it clears: a failure repeated every few seconds during an outage is one log line, and the
end of the outage is one more."""

from __future__ import annotations

from typing import Any


class ErrorState:
    """`failed` on each failure, `cleared` on each success; `current` is what fails now (None: nothing)."""

    def __init__(self, log: Any, failed_event: str, cleared_event: str) -> None:
        self._log = log
        self._failed_event = failed_event
        self._cleared_event = cleared_event
        self.current: str | None = None

    def failed(self, exc: BaseException, **fields: Any) -> None:
        """Remember the failure; log it if it differs from the one before."""
        if str(exc) != self.current:
            self._log.warning(self._failed_event, error=str(exc), error_type=type(exc).__name__, **fields)
        self.current = str(exc)

    def cleared(self) -> None:
        """The work succeeded: say so once if it had been failing."""
        if self.current is not None:
            self._log.info(self._cleared_event, after=self.current)
        self.current = None
