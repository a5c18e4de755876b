"""MM2's `transforms` and `predicates` (Kafka Connect's single message transforms), read as Connect reads them.

A flow's chain is `transforms=a,b` with `transforms.<alias>.type` and each type's keys, optionally applied only
where a predicate holds (`transforms.<alias>.predicate`, `transforms.<alias>.negate`), predicates declared by
`predicates=p` and `predicates.<alias>.type`. Flow keys (`A->B.transforms...`) override top-level ones key by key,
as MM2 overrides a connector's properties.

Strait applies the transforms of Apache Kafka that make sense on MM2's byte records (Filter, InsertHeader,
DropHeaders; HasHeaderKey, RecordIsTombstone, TopicNameMatches) and Python callables of its own. Every other
class stops the configuration with an error naming the key: a transform silently not applied would give the
target different data than MM2 gives it. The topic routers are refused with the reason: every Strait service
(topic-sync, offset syncs, checkpoints, the translator) names remote topics by the replication policy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from shared.config.values import parse_bool, parse_list
from shared.errors import ConfigError
from shared.filters.java_regex import JavaRegexError, compile_java

TRANSFORMS_KEY = "transforms"
PREDICATES_KEY = "predicates"
CONNECT = "org.apache.kafka.connect.transforms."

FILTER = CONNECT + "Filter"
INSERT_HEADER = CONNECT + "InsertHeader"
DROP_HEADERS = CONNECT + "DropHeaders"
PYTHON = "strait.transforms.Python"  # Strait's own: `transforms.<alias>.function=module:function`
HAS_HEADER_KEY = CONNECT + "predicates.HasHeaderKey"
RECORD_IS_TOMBSTONE = CONNECT + "predicates.RecordIsTombstone"
TOPIC_NAME_MATCHES = CONNECT + "predicates.TopicNameMatches"

TransformKind = Literal["filter", "insert_header", "drop_headers", "python"]
PredicateKind = Literal["has_header_key", "is_tombstone", "topic_matches"]

TRANSFORM_KINDS: dict[str, TransformKind] = {
    FILTER: "filter",
    INSERT_HEADER: "insert_header",
    DROP_HEADERS: "drop_headers",
    PYTHON: "python",
}
PREDICATE_KINDS: dict[str, PredicateKind] = {
    HAS_HEADER_KEY: "has_header_key",
    RECORD_IS_TOMBSTONE: "is_tombstone",
    TOPIC_NAME_MATCHES: "topic_matches",
}
ROUTERS = {CONNECT + "RegexRouter", CONNECT + "TimestampRouter"}


@dataclass(frozen=True)
class PredicateSpec:
    """A Connect predicate: `argument` is HasHeaderKey's `name` or TopicNameMatches' pattern (in Python's
    spelling, matched against the whole remote topic name, as Connect matches the record's topic)."""

    alias: str
    kind: PredicateKind
    argument: str | None = None


@dataclass(frozen=True)
class TransformSpec:
    """One link of a flow's chain, as plain data (tasks receive it on Spark's workers)."""

    alias: str
    kind: TransformKind
    predicate: PredicateSpec | None = None
    negate: bool = False
    header: str | None = None  # InsertHeader
    value: bytes | None = None  # InsertHeader: `value.literal` as UTF-8, as Connect's string header converter writes it
    headers: tuple[str, ...] = ()  # DropHeaders
    function: str | None = None  # Python: `module:function`
    function_key: str | None = None  # Python: the key that names it, as the file spells it (for errors)


def transform_keys(props: Mapping[str, str]) -> dict[str, str]:
    """The keys of `props` that configure transforms or predicates."""
    return {
        key: value
        for key, value in props.items()
        if key in (TRANSFORMS_KEY, PREDICATES_KEY) or key.startswith((TRANSFORMS_KEY + ".", PREDICATES_KEY + "."))
    }


def parse_transforms(props: Mapping[str, str], key_names: Mapping[str, str]) -> tuple[TransformSpec, ...]:
    """The flow's chain from its effective `props`; `key_names` spells each key as the file does (for errors).
    Raises ConfigError naming the key of the first problem."""
    reader = _Reader(props, key_names)
    predicates = {alias: reader.predicate(alias) for alias in reader.aliases(PREDICATES_KEY)}
    return tuple(reader.transform(alias, predicates) for alias in reader.aliases(TRANSFORMS_KEY))


class _Reader:
    def __init__(self, props: Mapping[str, str], key_names: Mapping[str, str]) -> None:
        self._props, self._names = props, key_names

    def name(self, key: str) -> str:
        return self._names.get(key, key)

    def aliases(self, list_key: str) -> tuple[str, ...]:
        aliases = parse_list(self._props.get(list_key, ""))
        repeated = sorted({alias for alias in aliases if aliases.count(alias) > 1})
        if repeated:
            raise self.error(list_key, f"names {repeated[0]!r} twice (each alias once)")
        return aliases

    def error(self, key: str, problem: str) -> ConfigError:
        value = self._props.get(key)
        shown = f"{self.name(key)}={value}" if value is not None else self.name(key)
        return ConfigError(f"{shown}: {problem}", key=self.name(key), value=value)

    def required(self, key: str, what: str) -> str:
        value = self._props.get(key, "").strip()
        if not value:
            raise self.error(key, f"missing: {what}")
        return value

    def predicate(self, alias: str) -> PredicateSpec:
        key = f"{PREDICATES_KEY}.{alias}.type"
        cls = self.required(key, f"the class of predicate {alias!r} (listed in {self.name(PREDICATES_KEY)})")
        kind = PREDICATE_KINDS.get(cls)
        if kind is None:
            supported = ", ".join(sorted(PREDICATE_KINDS))
            raise self.error(key, f"Strait does not implement this predicate; it implements {supported}")
        if kind == "has_header_key":
            return PredicateSpec(alias, kind, self.required(f"{PREDICATES_KEY}.{alias}.name", "the header key"))
        if kind == "topic_matches":
            pattern_key = f"{PREDICATES_KEY}.{alias}.pattern"
            pattern = self.required(pattern_key, "a regular expression for the topic name")
            try:
                translated = compile_java(pattern).pattern
            except (re.error, JavaRegexError) as exc:
                raise self.error(pattern_key, f"not a valid regular expression ({exc})") from None
            return PredicateSpec(alias, kind, translated)
        return PredicateSpec(alias, kind)

    def transform(self, alias: str, predicates: Mapping[str, PredicateSpec]) -> TransformSpec:
        prefix = f"{TRANSFORMS_KEY}.{alias}."
        key = prefix + "type"
        cls = self.required(key, f"the class of transform {alias!r} (listed in {self.name(TRANSFORMS_KEY)})")
        if cls in ROUTERS:
            raise self.error(
                key,
                "renames the remote topic, and topic-sync, the offset syncs, the checkpoints and the translator all "
                "name remote topics by the replication policy, so the renamed topic would have none of them; name "
                "remote topics with replication.policy.class (and replication.policy.separator) instead",
            )
        kind = TRANSFORM_KINDS.get(cls)
        if kind is None:
            supported = ", ".join(sorted(TRANSFORM_KINDS))
            raise self.error(
                key,
                f"Strait does not implement this transform, and a transform not applied would give the target "
                f"other records than MM2 does; it implements {supported} (a Python function with {PYTHON})",
            )
        predicate = None
        predicate_alias = self._props.get(prefix + "predicate", "").strip()
        if predicate_alias:
            predicate = predicates.get(predicate_alias)
            if predicate is None:
                listed = self.name(PREDICATES_KEY)
                raise self.error(prefix + "predicate", f"no predicate {predicate_alias!r} in {listed}")
        negate_key = prefix + "negate"
        negate = parse_bool(self.name(negate_key), self._props[negate_key]) if negate_key in self._props else False
        if negate and predicate is None:
            raise self.error(negate_key, f"negates nothing: set {self.name(prefix + 'predicate')}")
        spec = TransformSpec(alias, kind, predicate, negate)
        if kind == "insert_header":
            header = self.required(prefix + "header", "the name of the header to add")
            if prefix + "value.literal" not in self._props:
                raise self.error(prefix + "value.literal", "missing: the header's value")
            return replace(spec, header=header, value=self._props[prefix + "value.literal"].encode())
        if kind == "drop_headers":
            headers = parse_list(self.required(prefix + "headers", "the header names to drop, comma-separated"))
            return replace(spec, headers=headers)
        if kind == "python":
            function = self.required(prefix + "function", "the Python function, as module:function")
            module, _, name = function.partition(":")
            if not module.strip() or not name.strip():
                raise self.error(prefix + "function", "expected module:function, e.g. my_masks:mask_email")
            return replace(spec, function=function.strip(), function_key=self.name(prefix + "function"))
        return spec
