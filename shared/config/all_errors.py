"""Every problem of a config file at once: someone fixing a file should not need one round per mistake.

Validation stops at the first problem, so the file is read again with the key that problem named left out (its
default then applies) until it passes, up to `MAX_ERRORS`. Each problem is reported as the services would report
it. A problem that names no key, or one that only exists because a key was left out (a required key), ends the
search: what follows it could be an echo of the first, not a mistake of the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from shared.config.mm2 import parse_mm2_config
from shared.config.properties import load_properties_file
from shared.config.redaction import one_line
from shared.errors import ConfigError

MAX_ERRORS = 20


def config_errors(path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> list[ConfigError]:
    """The problems of the file at `path`, in the order validation meets them; empty when it is valid."""
    try:
        props = load_properties_file(path)
    except ConfigError as exc:
        exc.message = one_line(exc.message)
        return [exc]
    return props_errors(props, env=env)


def props_errors(props: Mapping[str, str], *, env: Mapping[str, str] | None = None) -> list[ConfigError]:
    """The problems of `props` (see the module docstring)."""
    errors: list[ConfigError] = []
    remaining = dict(props)
    left_out: list[str] = []
    while len(errors) < MAX_ERRORS:
        try:
            parse_mm2_config(remaining, env=env)
            return errors
        except ConfigError as exc:
            if _follows_from(exc, left_out) or (errors and str(exc) == str(errors[-1])):
                return errors
            errors.append(exc)
            if exc.key is None or exc.key not in remaining:
                return errors
            left_out.append(exc.key)
            del remaining[exc.key]
    return errors


def _follows_from(error: ConfigError, left_out: list[str]) -> bool:
    """True when `error` is about a key this search left out (a required key now missing), not the file's own."""
    text = str(error)
    return any(key in text or (error.key is not None and key.endswith(error.key)) for key in left_out)
