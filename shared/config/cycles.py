"""Refuse replication loops that would copy forever: cycles of enabled flows where IdentityReplicationPolicy hides them.

With DefaultReplicationPolicy a remote topic carries its source alias (`A.orders`), and MM2 never copies a
topic to a cluster in its chain, so A->B plus B->A (active-active) is safe. IdentityReplicationPolicy keeps
names, so a topic copied A->B can be copied B->A back into itself and around again, forever (with a
default-policy flow in the loop, under a name that grows each round). MM2 accepts such a config; Strait
refuses it, unless it can show the loop carries nothing:

An enabled identity flow X->Y that lies on a cycle of enabled flows is accepted only when its `topics` are
literal names (letters, digits, `_`, `-`, and dots written `[.]` or `\\.`) and none of them, followed
through every enabled flow (its topic filter, its policy and MM2's own cycle check), comes back to X under a
name X->Y copies. Regular expressions cannot be checked that way, so they are refused on such a flow.
A flow with provenance headers on (`strait.provenance.enabled`) is accepted on any cycle when every enabled flow
into its source has them on too: the headers, not the names, stop the loop.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from shared.config.flow import FlowConfig
from shared.config.redaction import describe
from shared.errors import ConfigError
from shared.filters import DefaultTopicFilter
from shared.replication_policy import ReplicationPolicy, replication_policy_for, should_replicate_topic

MAX_TOPIC_NAME = 249  # Kafka's limit: a longer remote name can never exist, so the chain ends there
MAX_STATES = 10_000
_LITERAL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_ESCAPED = {"\\.": ".", "\\-": "-", "\\_": "_", "[.]": "."}


@dataclass(frozen=True, slots=True)
class _Rule:
    """One enabled flow's topic rule: what it copies and under which name."""

    flow: FlowConfig
    policy: ReplicationPolicy
    topic_filter: DefaultTopicFilter

    def copies(self, topic: str) -> bool:
        return should_replicate_topic(
            self.policy,
            topic,
            target_alias=self.flow.target,
            topic_filter=self.topic_filter,
            heartbeats_replication_enabled=self.flow.settings.heartbeats_replication_enabled,
        )

    def remote(self, topic: str) -> str:
        return self.policy.format_remote_topic(self.flow.source, topic)


def check_cycles(flows: Iterable[FlowConfig]) -> None:
    """Raise a ConfigError naming the flow, its `topics` and the loop, for the first identity loop found."""
    rules: dict[str, list[_Rule]] = {}
    for flow in flows:
        if flow.enabled:
            rules.setdefault(flow.source, []).append(_rule(flow))
    for rule in (r for by_source in rules.values() for r in by_source):
        flow = rule.flow
        if flow.settings.replication_policy_class != "identity":
            continue
        loop = _path(rules, flow.target, flow.source)
        if loop is None or _marked_both_ways(rules, flow):
            continue
        cycle = "->".join([flow.source, *loop])
        names = literal_names(flow.settings.topics)
        topics_key = f"{flow.name}.topics"
        shown = describe(topics_key, ",".join(flow.settings.topics))
        advice = "list literal topic names there that do not come back (dots as [.]), or use DefaultReplicationPolicy"
        if names is None:
            raise ConfigError(
                f"flows {cycle} form a cycle and {flow.name} uses IdentityReplicationPolicy, which cannot tell a "
                f"copied topic from an original: {shown} may copy topics back to {flow.source} forever; {advice}",
                key=topics_key,
                value=",".join(flow.settings.topics),
            )
        for name in names:
            back = _comes_back(rules, rule, name) if rule.copies(name) else None
            if back is not None:
                raise ConfigError(
                    f"flows {cycle} form a cycle and {flow.name} uses IdentityReplicationPolicy: topic {name!r} of "
                    f"{shown} comes back to {flow.source} as {back!r} and would be copied again, forever; {advice}",
                    key=topics_key,
                    value=",".join(flow.settings.topics),
                )


def _marked_both_ways(rules: Mapping[str, list[_Rule]], flow: FlowConfig) -> bool:
    """True when `flow` writes provenance headers and every enabled flow into its source drops records that
    passed through there (shared/records/provenance.py): nothing it copies can come back and be copied again."""
    into_source = [r.flow for by_source in rules.values() for r in by_source if r.flow.target == flow.source]
    return flow.settings.provenance_enabled and all(other.settings.provenance_enabled for other in into_source)


def literal_names(entries: Sequence[str]) -> tuple[str, ...] | None:
    """The topic names `entries` match when each is a literal name, else None (some entry is a real regex)."""
    names: list[str] = []
    for entry in entries:
        chars: list[str] = []
        position = 0
        while position < len(entry):
            pair = entry[position : position + 2]
            triple = entry[position : position + 3]
            if entry[position] in _LITERAL_CHARS:
                chars.append(entry[position])
                position += 1
            elif triple in _ESCAPED:
                chars.append(_ESCAPED[triple])
                position += 3
            elif pair in _ESCAPED:
                chars.append(_ESCAPED[pair])
                position += 2
            else:
                return None
        names.append("".join(chars))
    return tuple(names)


def _rule(flow: FlowConfig) -> _Rule:
    settings = flow.settings
    policy = replication_policy_for(
        settings.replication_policy_class,
        separator=settings.replication_policy_separator,
        internal_topic_separator_enabled=settings.internal_topic_separator_enabled,
        source_cluster_alias=flow.source,
    )
    return _Rule(flow, policy, DefaultTopicFilter(settings.topics, settings.topics_exclude))


def _path(rules: Mapping[str, list[_Rule]], start: str, goal: str) -> list[str] | None:
    """Aliases of a shortest chain of enabled flows from `start` to `goal` (both included), or None."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        alias = queue.popleft()
        if alias == goal:
            chain: list[str] = []
            current: str | None = alias
            while current is not None:
                chain.append(current)
                current = previous[current]
            return chain[::-1]
        for rule in rules.get(alias, []):
            if rule.flow.target not in previous:
                previous[rule.flow.target] = alias
                queue.append(rule.flow.target)
    return None


def _comes_back(rules: Mapping[str, list[_Rule]], first: _Rule, name: str) -> str | None:
    """The name under which topic `name`, copied by `first`, reaches `first`'s source and is copied again."""
    home = first.flow.source
    start = (first.flow.target, first.remote(name))
    seen = {start}
    queue = deque([start])
    while queue:
        alias, topic = queue.popleft()
        for rule in rules.get(alias, []):
            if not rule.copies(topic):
                continue
            remote = rule.remote(topic)
            if len(remote) > MAX_TOPIC_NAME:
                continue
            if rule.flow.target == home and first.copies(remote):
                return remote
            state = (rule.flow.target, remote)
            if state not in seen:
                if len(seen) >= MAX_STATES:
                    return remote  # too many ways around to rule a loop out: treat it as one
                seen.add(state)
                queue.append(state)
    return None
