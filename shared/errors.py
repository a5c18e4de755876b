"""The one root error type of Strait and its families; each carries data and a `retriable` flag."""

from __future__ import annotations


class StraitError(Exception):
    """Root of every error Strait raises on purpose.

    `retriable` tells a caller whether trying the same thing again later can succeed.
    """

    retriable: bool = False

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        self.message = message
        if retriable is not None:
            self.retriable = retriable

    def __str__(self) -> str:
        return self.message


class ConfigError(StraitError):
    """A configuration key or value is wrong; `key` and `value` name it."""

    def __init__(self, message: str, *, key: str | None = None, value: object = None) -> None:
        super().__init__(message, retriable=False)
        self.key = key
        self.value = value


class CodecError(StraitError):
    """Bytes that do not decode as the record or event they claim to be."""


class KafkaOperationError(StraitError):
    """A Kafka call failed; `retriable` follows the broker's own verdict."""

    def __init__(self, message: str, *, operation: str, retriable: bool = True) -> None:
        super().__init__(message, retriable=retriable)
        self.operation = operation


class AuthorizationError(KafkaOperationError):
    """The principal lacks a permission; fixed by an operator, so retried slowly."""

    def __init__(self, message: str, *, operation: str, resource: str) -> None:
        super().__init__(message, operation=operation, retriable=True)
        self.resource = resource
