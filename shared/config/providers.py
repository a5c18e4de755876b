"""Resolve Kafka config-provider references, `${env:NAME}` and `${file:path:key}`, inside values.

A file that does not set `config.providers` has the providers `env` and `file` built in (what Strait has
always documented). A file that sets it declares its providers the Kafka way (`config.providers=secrets`,
`config.providers.secrets.class=...FileConfigProvider`), and then, as in Kafka, only the names it lists (each
with its `.class`) resolve: a file that declares only a restricted provider must not leave `file` and `env`
open to read any path or variable. A declared name is an alias of the matching provider, and the providers'
own parameters are honoured (`config.providers.<name>.param.allowed.paths` for files and directories,
`...param.allowlist.pattern` for the environment). A DirectoryConfigProvider (`${dir:/path/to/dir:file}`, as
Kubernetes mounts secrets) reads the whole content of a regular file in that directory. Where Kafka leaves an
unresolvable reference in place, Strait refuses the config.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath

from shared.config.properties import load_properties_file
from shared.errors import ConfigError

PROVIDERS_KEY = "config.providers"
# Kafka's ConfigTransformer pattern: provider, an optional path, and a key, separated by ':'.
_REFERENCE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
_FILE_CLASSES = frozenset({"FileConfigProvider", "org.apache.kafka.common.config.provider.FileConfigProvider"})
_ENV_CLASSES = frozenset({"EnvVarConfigProvider", "org.apache.kafka.common.config.provider.EnvVarConfigProvider"})
_DIR_CLASSES = frozenset({"DirectoryConfigProvider", "org.apache.kafka.common.config.provider.DirectoryConfigProvider"})


def is_provider_key(key: str) -> bool:
    """True for `config.providers` and `config.providers.*`: provider declarations, never resolved."""
    return key == PROVIDERS_KEY or key.startswith(PROVIDERS_KEY + ".")


@dataclass
class _Resolver:
    """Looks references up for one resolution pass (files are read at most once)."""

    env: Mapping[str, str]
    kinds: dict[str, str]
    # The names `config.providers` lists (None: it is not set, and the built-in names apply).
    listed: tuple[str, ...] | None = None
    unsupported: dict[str, str] = field(default_factory=dict)
    allowed_paths: dict[str, tuple[PurePath, ...]] = field(default_factory=dict)
    allowlists: dict[str, re.Pattern[str]] = field(default_factory=dict)
    files: dict[str, dict[str, str]] = field(default_factory=dict)

    def lookup(self, key: str, match: re.Match[str]) -> str:
        provider, path, name = match.group(1), match.group(2), match.group(3)
        reference = match.group(0)

        def fail(reason: str) -> ConfigError:
            return ConfigError(f"{key} references {reference}: {reason}", key=key, value=reference)

        kind = self.kinds.get(provider)
        if kind is None:
            if provider in self.unsupported:
                raise fail(
                    f"config provider '{provider}' has class {self.unsupported[provider]}, "
                    "but Strait supports only FileConfigProvider, DirectoryConfigProvider and EnvVarConfigProvider"
                )
            raise fail(self._undeclared(provider))
        if kind == "env":
            return self._env(provider, path, name, fail)
        if kind == "dir":
            return self._directory(provider, path, name, fail)
        return self._file(provider, path, name, fail)

    def _undeclared(self, provider: str) -> str:
        """Why `provider` does not resolve: unknown, or not declared the way a set `config.providers` asks."""
        if self.listed is None:
            return f"unknown config provider '{provider}' (available: {', '.join(sorted(self.kinds))})"
        if provider in self.listed:
            return f"config provider '{provider}' is listed in {PROVIDERS_KEY} but its .class is unset"
        declared = f"{PROVIDERS_KEY}={','.join(self.listed)}" if self.listed else f"{PROVIDERS_KEY}, which lists none"
        return (
            f"config provider '{provider}' is not listed in {declared}; "
            f"with {PROVIDERS_KEY} set, only the providers it lists (each with its .class) resolve"
        )

    def _env(self, provider: str, path: str | None, name: str, fail: Callable[[str], ConfigError]) -> str:
        if path:
            raise fail(f"the env provider takes no path; expected ${{{provider}:NAME}}")
        allowlist = self.allowlists.get(provider)
        if allowlist is not None and allowlist.fullmatch(name) is None:
            raise fail(f"environment variable {name} does not match {PROVIDERS_KEY}.{provider}.param.allowlist.pattern")
        if name not in self.env:
            raise fail(f"environment variable {name} is not set")
        return self.env[name]

    def _check_allowed(self, provider: str, path: str, fail: Callable[[str], ConfigError]) -> None:
        allowed = self.allowed_paths.get(provider)
        if allowed is not None:
            normalised = PurePath(os.path.normpath(path))
            if not any(normalised.is_relative_to(root) for root in allowed):
                raise fail(f"path {path} is outside {PROVIDERS_KEY}.{provider}.param.allowed.paths")

    def _directory(self, provider: str, path: str | None, name: str, fail: Callable[[str], ConfigError]) -> str:
        """DirectoryConfigProvider: the key names a regular file directly inside `path`; its content is the value."""
        if not path:
            raise fail(f"expected ${{{provider}:<directory>:<file name>}}")
        self._check_allowed(provider, path, fail)
        if not os.path.isdir(path):
            raise fail(f"{path} is not a directory")
        target = os.path.join(path, name)
        if "/" in name or name in (".", "..") or not os.path.isfile(target):
            raise fail(f"no file '{name}' in {path}")
        try:
            with open(target, encoding="utf-8") as handle:
                return handle.read()
        except OSError as exc:
            raise fail(f"cannot read {target} ({exc.strerror})") from exc
        except UnicodeDecodeError as exc:  # the message would quote bytes of the secret
            raise fail(f"{target} is not UTF-8 text") from exc

    def _file(self, provider: str, path: str | None, name: str, fail: Callable[[str], ConfigError]) -> str:
        if not path:
            raise fail(f"expected ${{{provider}:<path>:<key>}}")
        self._check_allowed(provider, path, fail)
        if path not in self.files:
            try:
                self.files[path] = load_properties_file(path)
            except ConfigError as exc:
                raise fail(str(exc)) from exc
        values = self.files[path]
        if name not in values:
            raise fail(f"key '{name}' not found in {path}")
        return values[name]


def resolve_references(props: Mapping[str, str], *, env: Mapping[str, str]) -> dict[str, str]:
    """Return `props` with every `${provider:[path:]key}` in a value replaced (one pass, no recursion).

    `config.providers*` values are kept as written. An unknown provider, a missing environment
    variable, an unreadable file or a missing key is a ConfigError naming the referring key.
    """
    resolver = _configure(props, env)
    resolved: dict[str, str] = {}
    for key, value in props.items():
        if is_provider_key(key) or "${" not in value:
            resolved[key] = value
        else:
            resolved[key] = _substitute(resolver, key, value)
    return resolved


def _substitute(resolver: _Resolver, key: str, value: str) -> str:
    """Replace each reference in `value`, the value of `key`."""
    return _REFERENCE.sub(lambda match: resolver.lookup(key, match), value)


def _configure(props: Mapping[str, str], env: Mapping[str, str]) -> _Resolver:
    """Build the resolver: the names `config.providers` lists with their classes, or, when it is not set, the
    built-in `env` and `file` plus any `config.providers.<name>.class` aliases."""
    declaration = props.get(PROVIDERS_KEY)
    if declaration is None:
        resolver = _Resolver(env=env, kinds={"env": "env", "file": "file"})
    else:
        listed = tuple(name for name in (part.strip() for part in declaration.split(",")) if name)
        resolver = _Resolver(env=env, kinds={}, listed=listed)
    prefix = PROVIDERS_KEY + "."
    for key, value in props.items():
        if not key.startswith(prefix) or not key.endswith(".class"):
            continue
        name = key[len(prefix) : -len(".class")]
        if resolver.listed is not None and name not in resolver.listed:
            continue  # a class for a name config.providers does not list is not a provider (as in Kafka)
        class_name = value.strip()
        if class_name in _FILE_CLASSES:
            resolver.kinds[name] = "file"
        elif class_name in _ENV_CLASSES:
            resolver.kinds[name] = "env"
        elif class_name in _DIR_CLASSES:
            resolver.kinds[name] = "dir"
        else:
            resolver.kinds.pop(name, None)
            resolver.unsupported[name] = class_name
    for name, kind in resolver.kinds.items():
        param = f"{prefix}{name}.param."
        if kind in ("file", "dir") and param + "allowed.paths" in props:
            resolver.allowed_paths[name] = _allowed_paths(param + "allowed.paths", props[param + "allowed.paths"])
        if kind == "env" and param + "allowlist.pattern" in props:
            resolver.allowlists[name] = _allowlist(param + "allowlist.pattern", props[param + "allowlist.pattern"])
    return resolver


def _allowed_paths(key: str, value: str) -> tuple[PurePath, ...]:
    """FileConfigProvider's allowed.paths: absolute, existing paths, comma separated."""
    roots: list[PurePath] = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        normalised = os.path.normpath(entry)
        if not os.path.isabs(normalised):
            raise ConfigError(f"{key}={value!r}: path {entry!r} is not absolute", key=key, value=value)
        if not os.path.exists(normalised):
            raise ConfigError(f"{key}={value!r}: path {entry!r} does not exist", key=key, value=value)
        roots.append(PurePath(normalised))
    return tuple(roots)


def _allowlist(key: str, value: str) -> re.Pattern[str]:
    """EnvVarConfigProvider's allowlist.pattern: a regex the whole variable name must match."""
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigError(f"{key}={value!r}: expected a regular expression ({exc})", key=key, value=value) from exc
