"""The translator's domain errors; `problems.py` maps each family to one HTTP status."""

from __future__ import annotations

from shared.errors import StraitError


class NotFoundError(StraitError):
    """Something the request names is not known: a cluster, a flow, a group, a topic-partition."""


class UnknownClusterError(NotFoundError):
    """The request names a cluster alias that the config does not define."""


class UnknownFlowError(NotFoundError):
    """Both clusters exist, but this translator does not serve a flow between them."""


class UnknownGroupError(NotFoundError):
    """No checkpoint of the group was seen for the flow."""


class UnknownPartitionError(NotFoundError):
    """No offset sync of the topic-partition was seen, or the offset predates every stored sync."""


class NotReadyError(StraitError):
    """The index has not read the topic it needs to its end yet; asking again later succeeds."""

    retriable = True


class ConflictError(StraitError):
    """The request cannot be applied in the current state (for example a group with live members)."""


class UnauthorizedError(StraitError):
    """The endpoint needs the bearer token and the request did not carry the right one."""


class ForbiddenError(StraitError):
    """The endpoint is off on this translator, whatever the request carries."""
