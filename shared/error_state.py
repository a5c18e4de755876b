"""The current error of a piece of work (a status publication, a heartbeat, a flow's open), or of a flow's several
pieces of work (its rounds, listings, followers: `FlowHealth`), logged when it changes and once when it clears: a
failure repeated every few seconds during an outage is one log line, however many groups or topics it names, and
the end of the outage is one more. The status shows the current error."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from structlog.typing import FilteringBoundLogger


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


class FlowHealth:
    """`note(work, errors)` after every attempt of `work` (no errors: it succeeded); `last_error` is the flow's
    current error (the first failing work's first failure; None when nothing fails)."""

    def __init__(self, log: FilteringBoundLogger, failed_event: str, recovered_event: str) -> None:
        self._log = log
        self._failed_event = failed_event
        self._recovered_event = recovered_event
        self._failing: dict[str, list[str]] = {}  # work -> its failures at the last attempt
        self.last_error: str | None = None

    def note(
        self,
        work: str,
        errors: Sequence[BaseException],
        describe: Callable[[BaseException], Mapping[str, Any]] | None = None,
        **fields: Any,
    ) -> bool:
        """Record this attempt's failures; True if the flow's current error changed (publish the status now).

        Logs the first failure the work did not have at its last attempt (with how many it has now), and the
        work's recovery once; `fields`, and what `describe` says of that failure, go on the failure's line."""
        before = self.last_error
        previous = self._failing.get(work, [])
        messages = [str(exc) for exc in errors]
        if messages:
            new = next((exc for exc in errors if str(exc) not in previous), None)
            if new is not None:
                self._log.warning(
                    self._failed_event,
                    work=work,
                    error=str(new),
                    error_type=type(new).__name__,
                    failures=len(messages),
                    **fields,
                    **(describe(new) if describe is not None else {}),
                )
            self._failing[work] = messages
        elif work in self._failing:
            del self._failing[work]
            self._log.info(self._recovered_event, work=work)
        self.last_error = next((failures[0] for failures in self._failing.values()), None)
        return self.last_error != before

    def failing(self) -> bool:
        """True while some work fails."""
        return bool(self._failing)
