"""`strait convert-strimzi`: a Strimzi `KafkaMirrorMaker2` resource (kafka.strimzi.io/v1beta2) as the MM2 properties
file Strait reads, so a team running MM2 under Strimzi can start from what it has.

Each cluster becomes `<alias>.bootstrap.servers` and its TLS and SCRAM/PLAIN settings; each mirror a flow with its
patterns and its connectors' `config`. Secrets stay in Kubernetes Secrets: every reference reads the Secret's key
from a directory (Kafka's DirectoryConfigProvider, as Strimzi mounts them), `<secrets dir>/<secret name>/<key>`.
What has no Strait equivalent (OAuth, connector-level Connect settings such as `tasksMax`) is listed, never
dropped silently.

The resource is input to distrust: every key and value is written with Java's properties escaping (no value adds
a line, so none can add a key such as a `security.protocol` downgrade), and each Secret name and key, which become
a path under the secrets directory, must be a name Kubernetes itself accepts (so `../..` cannot leave the mount).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from shared.config.layout import ALIAS
from shared.config.properties import comment_line, printable, property_line
from shared.errors import ConfigError

SECRETS_DIR = "/etc/strait/secrets"
PROVIDER = "secrets"
_SCRAM = {"scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}
_PATTERNS = (  # Strimzi's mirror field -> MM2's flow key (older Strimzi spelt the excludes as blacklists)
    ("topicsPattern", "topics"),
    ("topicsExcludePattern", "topics.exclude"),
    ("topicsBlacklistPattern", "topics.exclude"),
    ("groupsPattern", "groups"),
    ("groupsExcludePattern", "groups.exclude"),
    ("groupsBlacklistPattern", "groups.exclude"),
)
# Kubernetes' rules (apimachinery's IsDNS1123Subdomain and IsConfigMapKey) for a Secret's name and its keys.
_SECRET_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_SECRET_NAME_MAX = 253
_SECRET_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_JAAS_QUOTED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}  # what ends a quoted JAAS value


@dataclass
class Conversion:
    """The properties, in order, and what could not be converted (each a sentence)."""

    name: str
    lines: list[str] = field(default_factory=list)
    not_converted: list[str] = field(default_factory=list)

    def set(self, key: str, value: object) -> None:
        """One `key = value` line, escaped as Java's Properties.store does: it reads back as this one key."""
        if isinstance(value, bool):
            text = str(value).lower()
        elif isinstance(value, str | int | float):
            text = str(value)
        else:
            raise ConfigError(f"{key}: expected a string, number or boolean, got {_kind(value)}", key=key)
        self.lines.append(property_line(key, text))

    def note(self, item: str) -> None:
        """Name what was not converted (kept printable: it is shown on stderr and in the header)."""
        self.not_converted.append(printable(item))

    def text(self) -> str:
        """The whole file."""
        header = [
            f"Converted from the KafkaMirrorMaker2 resource {self.name!r} by `strait convert-strimzi`.",
            f"Secrets are read from {SECRETS_DIR}/<secret name>/<key>: mount each Secret named below there.",
            *(f"NOT CONVERTED: {item}" for item in self.not_converted),
        ]
        return "\n".join([*map(comment_line, header), "", *self.lines]) + "\n"


def convert(resource_text: str, secrets_dir: str = SECRETS_DIR) -> Conversion:
    """The MM2 properties for the first KafkaMirrorMaker2 document of `resource_text`; ConfigError if none."""
    documents = [doc for doc in yaml.safe_load_all(resource_text) if isinstance(doc, dict)]
    resource = next((doc for doc in documents if doc.get("kind") == "KafkaMirrorMaker2"), None)
    if resource is None:
        raise ConfigError("no KafkaMirrorMaker2 resource in the file (kind: KafkaMirrorMaker2)")
    spec = _mapping(resource.get("spec"), "spec")
    name = str(_mapping(resource.get("metadata", {}), "metadata").get("name", "unnamed"))
    out = Conversion(name)
    clusters = [_mapping(c, "spec.clusters[]") for c in spec.get("clusters") or []]
    if not clusters:
        raise ConfigError("spec.clusters is empty: a KafkaMirrorMaker2 (v1beta2) names its clusters there")
    aliases = [_alias(_required(c, "alias", "spec.clusters[]")) for c in clusters]
    out.set("config.providers", PROVIDER)
    out.set(f"config.providers.{PROVIDER}.class", "org.apache.kafka.common.config.provider.DirectoryConfigProvider")
    out.set("clusters", ", ".join(aliases))
    for cluster in clusters:
        _cluster(out, cluster, secrets_dir)
    for mirror in spec.get("mirrors") or []:
        _mirror(out, _mapping(mirror, "spec.mirrors[]"), set(aliases))
    replicas = spec.get("replicas")
    if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0):
        raise ConfigError(f"spec.replicas: expected a whole number of pods (0 or more), got {_shown(replicas)}")
    if replicas not in (None, 1):
        out.note(f"replicas: {replicas} (Strait's services scale on their own: see docs/operations.md)")
    return out


def _cluster(out: Conversion, cluster: Mapping[str, Any], secrets_dir: str) -> None:
    alias = str(cluster["alias"])
    out.lines.append("")
    out.set(f"{alias}.bootstrap.servers", _required(cluster, "bootstrapServers", f"cluster {alias}"))
    tls = cluster.get("tls")
    auth = cluster.get("authentication")
    sasl = isinstance(auth, Mapping) and auth.get("type") in (*_SCRAM, "plain")
    protocol = ("SASL_SSL" if sasl else "SSL") if tls else ("SASL_PLAINTEXT" if sasl else None)
    if protocol is not None:
        out.set(f"{alias}.security.protocol", protocol)
    if isinstance(tls, Mapping):
        where = f"cluster {alias} tls.trustedCertificates[]"
        certificates = [_mapping(c, where) for c in tls.get("trustedCertificates") or []]
        if certificates:
            out.set(f"{alias}.ssl.truststore.type", "PEM")
            refs = [_ref(secrets_dir, c, where, "certificate") for c in certificates]
            out.set(f"{alias}.ssl.truststore.certificates", "\n".join(refs))
    if isinstance(auth, Mapping):
        _authentication(out, alias, auth, secrets_dir)
    for key, value in (cluster.get("config") or {}).items():
        out.set(f"{alias}.{key}", value)


def _authentication(out: Conversion, alias: str, auth: Mapping[str, Any], secrets_dir: str) -> None:
    kind = auth.get("type")
    where = f"cluster {alias} authentication"
    if kind in _SCRAM or kind == "plain":
        username = "".join(_JAAS_QUOTED.get(char, char) for char in str(_required(auth, "username", where)))
        password = _mapping(_required(auth, "passwordSecret", where), f"{where}.passwordSecret")
        secret = _ref(secrets_dir, password, f"{where}.passwordSecret", "password")
        module = "plain.PlainLoginModule" if kind == "plain" else "scram.ScramLoginModule"
        out.set(f"{alias}.sasl.mechanism", "PLAIN" if kind == "plain" else _SCRAM[str(kind)])
        out.set(
            f"{alias}.sasl.jaas.config",
            f'org.apache.kafka.common.security.{module} required username="{username}" password="{secret}";',
        )
    elif kind == "tls":
        pair = _mapping(_required(auth, "certificateAndKey", where), f"{where}.certificateAndKey")
        out.set(f"{alias}.ssl.keystore.type", "PEM")
        pair_where = f"{where}.certificateAndKey"
        out.set(f"{alias}.ssl.keystore.certificate.chain", _ref(secrets_dir, pair, pair_where, "certificate"))
        out.set(f"{alias}.ssl.keystore.key", _ref(secrets_dir, pair, pair_where, "key"))
    else:
        out.note(f"cluster {alias}: authentication type {kind!r} (Strait reads SCRAM, PLAIN and TLS)")


def _mirror(out: Conversion, mirror: Mapping[str, Any], aliases: set[str]) -> None:
    source = str(_required(mirror, "sourceCluster", "spec.mirrors[]"))
    target = str(_required(mirror, "targetCluster", "spec.mirrors[]"))
    for alias in (source, target):
        if alias not in aliases:
            raise ConfigError(f"mirror {source}->{target}: cluster {alias!r} is not in spec.clusters")
    flow = f"{source}->{target}"
    out.lines.append("")
    out.set(f"{flow}.enabled", "true")
    for field_name, key in _PATTERNS:
        if field_name in mirror:
            out.set(f"{flow}.{key}", mirror[field_name])
    for connector, switch in (
        ("sourceConnector", None),
        ("checkpointConnector", "emit.checkpoints.enabled"),
        ("heartbeatConnector", "emit.heartbeats.enabled"),
    ):
        settings = mirror.get(connector)
        if settings is None:
            if switch is not None:  # Strimzi runs only the connectors the mirror lists
                out.set(f"{flow}.{switch}", "false")
            continue
        settings = _mapping(settings, f"mirror {flow} {connector}")
        for key, value in (settings.get("config") or {}).items():
            out.set(f"{flow}.{key}", value)
        for unused in sorted(set(settings) - {"config"}):
            out.note(f"mirror {flow} {connector}.{unused} (a Connect setting; Strait's copy tasks: STRAIT_TASKS)")


def _ref(secrets_dir: str, holder: Mapping[str, Any], where: str, key_field: str) -> str:
    """The reference to a Secret's key as mounted, `${secrets:<dir>/<secret name>:<key>}`; both names checked."""
    secret = _required(holder, "secretName", where)
    if not isinstance(secret, str) or len(secret) > _SECRET_NAME_MAX or _SECRET_NAME.fullmatch(secret) is None:
        raise ConfigError(
            f"{where}.secretName: {_shown(secret)} is not a Kubernetes Secret name (lowercase letters, digits, '-' "
            f"and '.', starting and ending with a letter or digit, at most {_SECRET_NAME_MAX} characters)"
        )
    key = _required(holder, key_field, where)
    if not isinstance(key, str) or _SECRET_KEY.fullmatch(key) is None or key in (".", ".."):
        raise ConfigError(
            f"{where}.{key_field}: {_shown(key)} is not a key of a Kubernetes Secret "
            "(letters, digits, '-', '_' and '.', and not '.' or '..')"
        )
    return f"${{{PROVIDER}:{secrets_dir}/{secret}:{key}}}"


def _alias(value: object) -> str:
    """A cluster alias Strait reads: it prefixes keys and topic names, and `clusters` lists it."""
    alias = str(value)
    if ALIAS.fullmatch(alias) is None:
        raise ConfigError(
            f"spec.clusters[].alias: {_shown(value)} is not a cluster alias Strait reads (letters, digits, '_' and "
            "'-' only: aliases prefix topic names)"
        )
    return alias


def _shown(value: object) -> str:
    """`value` quoted for an error message, on one line and of bounded length."""
    text = repr(value)
    return text if len(text) <= 100 else text[:100] + "..."


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return "a mapping" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else type(value).__name__


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(value).__name__}")
    return value


def _required(holder: Mapping[str, Any], key: str, where: str) -> Any:
    if holder.get(key) in (None, ""):
        raise ConfigError(f"{where}: {key} is missing")
    return holder[key]
