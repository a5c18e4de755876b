"""Client secrets reach copy tasks through one Spark broadcast, never inside the task specs.

A task spec is pickled into every task Spark schedules (and into Spark's event logs and failure messages), so
its client settings carry a placeholder where a password, JAAS line or key was. The values go to executors
once, in a broadcast (encrypted in transit off local mode), and the task puts them back before it connects.
"""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Mapping

from services.data_mirror.work import TaskSpec
from shared.config.redaction import is_sensitive_key

_PREFIX = "${strait-secret:"


class SecretVault:
    """The driver's table of withheld values, by placeholder; random placeholders, so a spec reveals nothing."""

    def __init__(self) -> None:
        self._placeholders: dict[str, str] = {}  # value -> placeholder

    def withhold(self, props: Mapping[str, str]) -> dict[str, str]:
        """`props` with every secret value replaced by its placeholder."""
        return {key: self._placeholder(value) if is_sensitive_key(key) else value for key, value in props.items()}

    def _placeholder(self, value: str) -> str:
        if value not in self._placeholders:
            self._placeholders[value] = f"{_PREFIX}{secrets.token_hex(8)}}}"
        return self._placeholders[value]

    @property
    def values(self) -> dict[str, str]:
        """Placeholder -> value: what the broadcast carries."""
        return {placeholder: value for value, placeholder in self._placeholders.items()}


class MissingSecret(Exception):
    """A task spec names a secret the executor was not given (a driver bug, never a config problem)."""


def with_secrets(spec: TaskSpec, values: Mapping[str, str]) -> TaskSpec:
    """`spec` with its client settings' placeholders replaced by the real values (on the executor)."""
    return dataclasses.replace(
        spec,
        source_consumer=_restore(spec.source_consumer, values),
        source_admin=_restore(spec.source_admin, values),
        target_producer=_restore(spec.target_producer, values),
        target_consumer=_restore(spec.target_consumer, values),
        sync_producer=_restore(spec.sync_producer, values),
    )


def _restore(props: Mapping[str, str], values: Mapping[str, str]) -> dict[str, str]:
    out = {}
    for key, value in props.items():
        if value.startswith(_PREFIX):
            if value not in values:
                raise MissingSecret(f"the value of {key} was withheld from the task spec and not broadcast")
            value = values[value]
        out[key] = value
    return out
