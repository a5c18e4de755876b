"""`MirrorMakerConfig`: an MM2 properties file as clusters and flows, validated in one pass.

Loading order: file -> `STRAIT_CONFIG_OVERRIDES` -> `${...}` references -> model. Keys are
`clusters`, `<alias>.<client key>`, `<source>-><target>.<key>` and top-level `<key>`; anything that
is none of these (after the list of keys MM2 accepts but Strait ignores) is refused with a
suggestion, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from shared.config.cluster import ClusterConfig, build_cluster
from shared.config.cycles import check_cycles
from shared.config.flow import ROLES, ClientOverrides, FlowConfig
from shared.config.flow_settings import parse_flow_settings
from shared.config.known_keys import ENABLED_KEY, KeyKind, classify
from shared.config.layout import SIDES, Layout, flow_kind, lay_out
from shared.config.overrides import apply_overrides
from shared.config.properties import load_properties_file
from shared.config.providers import resolve_references
from shared.config.redaction import describe, one_line
from shared.config.transforms import parse_transforms, transform_keys
from shared.config.values import parse_bool
from shared.errors import ConfigError

_EOS_SOURCE_SUPPORT = "exactly.once.source.support"


@dataclass(frozen=True, slots=True)
class MirrorMakerConfig:
    """Every cluster (in `clusters=` order) and every ordered pair of them as a flow.

    `top_level` holds the keys without an alias prefix; `ignored_keys` lists the keys MM2 or Connect
    would read but Strait does not use (worth a warning at start-up). Treat the dicts as read-only.
    """

    clusters: dict[str, ClusterConfig]
    flows: tuple[FlowConfig, ...]
    top_level: dict[str, str] = field(default_factory=dict)
    ignored_keys: tuple[str, ...] = ()

    @property
    def enabled_flows(self) -> tuple[FlowConfig, ...]:
        """Flows with `A->B.enabled=true`."""
        return tuple(flow for flow in self.flows if flow.enabled)

    @property
    def heartbeat_flows(self) -> tuple[FlowConfig, ...]:
        """Flows that emit heartbeats: as in MM2, enabled or not, unless heartbeats are turned off."""
        return tuple(flow for flow in self.flows if flow.emits_heartbeats)

    def cluster(self, alias: str) -> ClusterConfig:
        """The cluster called `alias`; ConfigError if there is none."""
        if alias not in self.clusters:
            raise ConfigError(f"unknown cluster alias '{alias}' (clusters={self._aliases()})", value=alias)
        return self.clusters[alias]

    def flow(self, source: str, target: str) -> FlowConfig:
        """The flow `source->target`; ConfigError for an unknown alias or source == target."""
        for flow in self.flows:
            if flow.source == source and flow.target == target:
                return flow
        name = f"{source}->{target}"
        unknown = next((alias for alias in (source, target) if alias not in self.clusters), None)
        if unknown is not None:
            raise ConfigError(
                f"flow '{name}' names unknown cluster alias '{unknown}' (clusters={self._aliases()})", value=name
            )
        raise ConfigError(f"flow '{name}' has the same source and target", value=name)

    def flow_named(self, name: str) -> FlowConfig:
        """The flow spelled `A->B` (spaces around the arrow allowed)."""
        source, arrow, target = name.partition("->")
        if not arrow:
            raise ConfigError(f"flow name {name!r}: expected <source>-><target>, e.g. A->B", value=name)
        return self.flow(source.strip(), target.strip())

    def _aliases(self) -> str:
        return ",".join(self.clusters)


def load_mm2_config(path: str | os.PathLike[str], *, env: Mapping[str, str] | None = None) -> MirrorMakerConfig:
    """Read an MM2 properties file and build the validated config (see `parse_mm2_config`)."""
    try:
        return parse_mm2_config(load_properties_file(path), env=env)
    except ConfigError as exc:
        _put_on_one_line(exc)
        raise


def parse_mm2_config(props: Mapping[str, str], *, env: Mapping[str, str] | None = None) -> MirrorMakerConfig:
    """Apply `STRAIT_CONFIG_OVERRIDES`, resolve references, then validate and build the model.

    `env` defaults to the process environment; it feeds both the overrides and `${env:...}`.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    try:
        resolved = resolve_references(apply_overrides(props, environ), env=environ)
        return build_mm2_config(resolved)
    except ConfigError as exc:
        _put_on_one_line(exc)
        raise


def _put_on_one_line(exc: ConfigError) -> None:
    """Escape what would break the message's line: keys and values quoted in it may hold newlines or escapes."""
    exc.message = one_line(exc.message)


def build_mm2_config(props: Mapping[str, str]) -> MirrorMakerConfig:
    """Validate fully resolved `props` and build the model."""
    layout = lay_out(props)
    defaults = {k: v for k, v in layout.top_level.items() if classify(k) is KeyKind.CLIENT_DEFAULT}
    clusters = {
        alias: build_cluster(
            alias, layout.clusters[alias], defaults, key_names=_names(f"{alias}.", layout.clusters[alias])
        )
        for alias in layout.aliases
    }
    flows = tuple(
        _build_flow(source, target, layout, clusters, defaults)
        for source in layout.aliases
        for target in layout.aliases
        if source != target
    )
    check_cycles(flows)
    return MirrorMakerConfig(
        clusters=clusters, flows=flows, top_level=layout.top_level, ignored_keys=tuple(layout.ignored)
    )


def _names(prefix: str, props: Mapping[str, str]) -> dict[str, str]:
    return {key: prefix + key for key in props}


def _build_flow(
    source: str,
    target: str,
    layout: Layout,
    clusters: Mapping[str, ClusterConfig],
    defaults: Mapping[str, str],
) -> FlowConfig:
    """Effective props (flow over target cluster's worker switch over top level), settings, clients."""
    prefix = f"{source}->{target}."
    own = layout.flows.get((source, target), {})
    props = {k: v for k, v in layout.top_level.items() if classify(k) in (KeyKind.SETTING, KeyKind.STRAIT)}
    names = _names("", props)
    worker_switch = clusters[target].worker.get(_EOS_SOURCE_SUPPORT)
    if worker_switch is not None:
        props[_EOS_SOURCE_SUPPORT] = worker_switch
        names[_EOS_SOURCE_SUPPORT] = f"{target}.{_EOS_SOURCE_SUPPORT}"
    props.update(own)
    names.update(_names(prefix, own))
    enabled = parse_bool(names[ENABLED_KEY], props[ENABLED_KEY]) if ENABLED_KEY in props else False
    settings = parse_flow_settings(props, key_names=names)

    sides, side_overrides, overrides = _split_client_keys(own)

    def side_cluster(side: str, alias: str) -> ClusterConfig:
        if not sides[side]:
            return clusters[alias]
        keys = {**layout.clusters[alias], **sides[side]}
        key_names = {**_names(f"{alias}.", layout.clusters[alias]), **_names(f"{prefix}{side}.cluster.", sides[side])}
        return build_cluster(alias, keys, defaults, key_names=key_names)

    chain = transform_keys(layout.top_level) | transform_keys(own)
    chain_names = _names("", transform_keys(layout.top_level)) | _names(prefix, transform_keys(own))
    flow = FlowConfig(
        source=source,
        target=target,
        enabled=enabled,
        settings=settings,
        transforms=parse_transforms(chain, chain_names) if enabled else (),
        props=props,
        source_cluster=side_cluster("source", source),
        target_cluster=side_cluster("target", target),
        consumer_overrides=overrides["consumer"],
        producer_overrides=overrides["producer"],
        admin_overrides=overrides["admin"],
        source_overrides=side_overrides["source"],
        target_overrides=side_overrides["target"],
    )
    _check_exactly_once(flow)
    return flow


def _split_client_keys(
    own: Mapping[str, str],
) -> tuple[dict[str, dict[str, str]], dict[str, ClientOverrides], dict[str, dict[str, str]]]:
    """From a flow's own keys: per side `<side>.cluster.*`, per side `<side>.<role>.*`, and `<role>.*`.

    `<role>.override.*` (Connect's per-connector client overrides) wins over plain `<role>.*`.
    """
    sides: dict[str, dict[str, str]] = {side: {} for side in SIDES}
    side_roles: dict[str, dict[str, dict[str, str]]] = {side: {role: {} for role in ROLES} for side in SIDES}
    plain: dict[str, dict[str, str]] = {role: {} for role in ROLES}
    forced: dict[str, dict[str, str]] = {role: {} for role in ROLES}
    for key, value in own.items():
        kind = flow_kind(key)
        first, _, remainder = key.partition(".")
        second, _, client_key = remainder.partition(".")
        if kind == "cluster":
            sides[first][client_key] = value
        elif kind == "side":
            side_roles[first][second][client_key] = value
        elif kind == "override" and second == "override" and client_key:
            forced[first][client_key] = value
        elif kind == "override":
            plain[first][remainder] = value
    side_overrides = {side: ClientOverrides(**side_roles[side]) for side in SIDES}
    return sides, side_overrides, {role: {**plain[role], **forced[role]} for role in ROLES}


def _check_exactly_once(flow: FlowConfig) -> None:
    """Exactly-once copies only committed records, so the source consumer must read committed (as MM2)."""
    if not flow.settings.exactly_once_enabled:
        return
    isolation = flow.source_consumer_props()["isolation.level"]
    if isolation.strip() != "read_committed":
        key = f"{flow.name}.source.consumer.isolation.level"
        raise ConfigError(
            f"flow '{flow.name}': {describe('isolation.level', isolation)}: exactly-once needs read_committed "
            "on the source consumer",
            key=key,
            value=isolation,
        )
