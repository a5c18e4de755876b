"""MM2-format configuration: properties parsing, config providers, overrides and the typed model.

`load_mm2_config(path)` reads a connect-mirror-maker.properties file, applies
`STRAIT_CONFIG_OVERRIDES`, resolves `${env:...}`/`${file:...}` references and returns a validated
`MirrorMakerConfig`; every problem is a one-line `ConfigError` naming the key and value.
"""

from shared.config.cluster import ClusterConfig
from shared.config.flow import ClientOverrides, FlowConfig
from shared.config.flow_settings import FlowSettings, parse_flow_settings
from shared.config.mm2 import MirrorMakerConfig, build_mm2_config, load_mm2_config, parse_mm2_config
from shared.config.overrides import OVERRIDES_ENV, apply_overrides, parse_overrides
from shared.config.properties import load_properties_file, parse_properties
from shared.config.providers import resolve_references
from shared.config.redaction import is_sensitive_key

__all__ = [
    "OVERRIDES_ENV",
    "ClientOverrides",
    "ClusterConfig",
    "FlowConfig",
    "FlowSettings",
    "MirrorMakerConfig",
    "apply_overrides",
    "build_mm2_config",
    "is_sensitive_key",
    "load_mm2_config",
    "load_properties_file",
    "parse_flow_settings",
    "parse_mm2_config",
    "parse_overrides",
    "parse_properties",
    "resolve_references",
]
