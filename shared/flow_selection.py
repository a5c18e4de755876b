"""Which flows a process serves: one rule for every service and command (`--flows A->B,B->A` or every enabled one)."""

from __future__ import annotations

from shared.config import FlowConfig, MirrorMakerConfig
from shared.errors import ConfigError


def selected_flows(
    config: MirrorMakerConfig, selection: str | None = "", *, require_enabled: bool = True
) -> tuple[FlowConfig, ...]:
    """The flows named in `selection` (a comma list of `A->B`; a flow named twice counts once), else every enabled
    flow. A config without an enabled flow, an unknown alias or, with `require_enabled`, a named flow that is not
    enabled, is a ConfigError. Readers of a flow's checkpoints (the translator, the CLI) name flows that are not
    enabled: the checkpoints outlive the replication after a failover turns it off."""
    names = [name.strip() for name in (selection or "").split(",") if name.strip()]
    if not names:
        if not config.enabled_flows:
            raise ConfigError("no enabled flow in the config: set <source>-><target>.enabled=true for at least one")
        return config.enabled_flows
    chosen: list[FlowConfig] = []
    for name in names:
        flow = config.flow_named(name)
        if require_enabled and not flow.enabled:
            raise ConfigError(f"flow '{flow.name}' is not enabled (set {flow.name}.enabled=true)", value=name)
        if flow not in chosen:
            chosen.append(flow)
    return tuple(chosen)
