"""Java TLS trust and key stores (PEM, PKCS12, JKS) read into what librdkafka and Python's ssl module take.

Java clients read JKS and PKCS12 files whatever `ssl.*store.type` says (the JDK sniffs the format), so Strait
does the same: a PKCS12 or JKS trust store becomes PEM text; a PKCS12 key store is handed to librdkafka as
it is and converted for Python. A JKS key store cannot be read outside the JVM and is refused with the
keytool command that converts it.
"""

from __future__ import annotations

import hashlib
import ssl
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shared.errors import ConfigError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.serialization.pkcs12 import PKCS12KeyAndCertificates

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
# Every TLS key this module honours; with a plaintext protocol Java ignores them, and so do we.
TLS_KEYS = frozenset(
    {
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
    }
)
_JKS_MAGIC = b"\xfe\xed\xfe\xed"
_JCEKS_MAGIC = b"\xce\xce\xce\xce"


@dataclass(frozen=True)
class TrustStore:
    """Certificates to trust: a PEM file as given, or PEM text (inline, or converted from PKCS12/JKS)."""

    location: str | None = None
    pem: str | None = None


@dataclass(frozen=True)
class KeyStore:
    """The client's own key and chain: a PEM file, inline PEM, or a PKCS12 file."""

    pem_location: str | None = None
    key_pem: str | None = None
    chain_pem: str | None = None
    pkcs12_location: str | None = None
    store_password: str | None = None
    key_password: str | None = None


def uses_tls(props: Mapping[str, str]) -> bool:
    """True when `security.protocol` is SSL or SASL_SSL."""
    return props.get("security.protocol", "PLAINTEXT").strip().upper() in TLS_PROTOCOLS


def hostname_check(props: Mapping[str, str]) -> bool:
    """Java's `ssl.endpoint.identification.algorithm`: "https" (the default) checks, an empty value does not."""
    return props.get("ssl.endpoint.identification.algorithm", "https").strip() != ""


def _error(key: str, value: str, reason: str) -> ConfigError:
    return ConfigError(f"{key}={value}: {reason}", key=key, value=value)


def _store_type(props: Mapping[str, str], key: str) -> str:
    kind = props.get(key, "JKS").strip().upper()
    if kind not in ("JKS", "PKCS12", "PEM"):
        raise _error(key, kind, "expected PEM, PKCS12 or JKS")
    return kind


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise _error(key, location, f"cannot read it ({exc.strerror})") from exc


def trust_store(props: Mapping[str, str]) -> TrustStore | None:
    """The certificates `ssl.truststore.*` names, or None for the system's default trust."""
    kind = _store_type(props, "ssl.truststore.type")
    inline = props.get("ssl.truststore.certificates")
    location = props.get("ssl.truststore.location")
    if inline is not None:
        if kind != "PEM":
            raise _error("ssl.truststore.type", kind, "ssl.truststore.certificates needs ssl.truststore.type=PEM")
        return TrustStore(pem=inline)
    if location is None:
        return None
    if kind == "PEM":
        return TrustStore(location=location)
    data = _read("ssl.truststore.location", location)
    _refuse_untyped_pem("ssl.truststore", location, data)
    password = props.get("ssl.truststore.password")
    if data.startswith(_JKS_MAGIC):
        return TrustStore(pem=_jks_certificates(data, password, location))
    if data.startswith(_JCEKS_MAGIC):
        raise _error("ssl.truststore.location", location, "JCEKS stores are not supported; convert it to PKCS12 or PEM")
    return TrustStore(pem=_pkcs12_certificates(data, password, location))


def key_store(props: Mapping[str, str]) -> KeyStore | None:
    """The client key `ssl.keystore.*` names (for TLS client authentication), or None."""
    kind = _store_type(props, "ssl.keystore.type")
    key, chain = props.get("ssl.keystore.key"), props.get("ssl.keystore.certificate.chain")
    location = props.get("ssl.keystore.location")
    key_password = props.get("ssl.key.password")
    if key is not None or chain is not None:
        if key is None or chain is None:
            missing = "ssl.keystore.key" if key is None else "ssl.keystore.certificate.chain"
            raise ConfigError(f"{missing} is missing: an inline PEM key store needs both the key and the chain")
        if kind != "PEM":
            raise _error("ssl.keystore.type", kind, "an inline key and chain need ssl.keystore.type=PEM")
        return KeyStore(key_pem=key, chain_pem=chain, key_password=key_password)
    if location is None:
        return None
    if kind == "PEM":
        return KeyStore(pem_location=location, key_password=key_password)
    head = _read("ssl.keystore.location", location)[:64]
    _refuse_untyped_pem("ssl.keystore", location, head)
    if head[:4] in (_JKS_MAGIC, _JCEKS_MAGIC):
        raise _error(
            "ssl.keystore.location",
            location,
            "a JKS key store can only be read by Java; convert it once with "
            f"'keytool -importkeystore -srckeystore {location} -destkeystore keystore.p12 -deststoretype PKCS12' "
            "and set ssl.keystore.type=PKCS12",
        )
    return KeyStore(
        pkcs12_location=location, store_password=props.get("ssl.keystore.password"), key_password=key_password
    )


def _refuse_untyped_pem(prefix: str, location: str, data: bytes) -> None:
    """A PEM file under the default (JKS) or PKCS12 type: Java refuses it too, so say which setting is missing."""
    if data.lstrip().startswith(b"-----BEGIN"):
        raise _error(f"{prefix}.location", location, f"this is a PEM file: set {prefix}.type=PEM")


def _pem(der: bytes) -> str:
    return ssl.DER_cert_to_PEM_cert(der)


def _jks_certificates(data: bytes, password: str | None, location: str) -> str:
    """Trusted certificates of a JKS file (plus the first certificate of key entries, as the JDK trusts them)."""
    key = "ssl.truststore.location"
    if password is not None:
        # The JKS integrity check: SHA-1 over the password (UTF-16BE), a fixed phrase and the store.
        digest = hashlib.sha1(password.encode("utf-16-be") + b"Mighty Aphrodite" + data[:-20]).digest()
        if digest != data[-20:]:
            raise _error(key, location, "the JKS integrity check failed: wrong ssl.truststore.password?")
    try:
        return _parse_jks(data)
    except (struct.error, ValueError) as exc:
        raise _error(key, location, f"not a readable JKS trust store ({exc})") from exc


def _parse_jks(data: bytes) -> str:
    version, count = struct.unpack_from(">II", data, 4)
    if version not in (1, 2):
        raise ValueError(f"unknown JKS version {version}")
    pos, certificates = 12, []

    def skip_utf() -> None:
        nonlocal pos
        (length,) = struct.unpack_from(">H", data, pos)
        pos += 2 + length

    def read_cert() -> bytes:
        nonlocal pos
        if version == 2:
            skip_utf()  # the certificate type, "X.509"
        (length,) = struct.unpack_from(">I", data, pos)
        pos += 4 + length
        return data[pos - length : pos]

    for _ in range(count):
        (tag,) = struct.unpack_from(">I", data, pos)
        pos += 4
        skip_utf()  # alias
        pos += 8  # creation time
        if tag == 1:
            (key_length,) = struct.unpack_from(">I", data, pos)
            pos += 4 + key_length
            (chain_length,) = struct.unpack_from(">I", data, pos)
            pos += 4
            chain = [read_cert() for _ in range(chain_length)]
            certificates.extend(chain[:1])
        elif tag == 2:
            certificates.append(read_cert())
        else:
            raise ValueError(f"unknown entry tag {tag}")
    if not certificates:
        raise ValueError("it holds no certificate")
    return "".join(_pem(der) for der in certificates)


def _load_pkcs12(key: str, location: str, data: bytes, password: str | None) -> PKCS12KeyAndCertificates:
    """Open a PKCS12 store with the `cryptography` package (imported only when a PKCS12 store is used)."""
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError as exc:
        raise _error(key, location, "reading PKCS12 needs the 'cryptography' package; or convert it to PEM") from exc
    try:
        return pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError as exc:
        password_key = key.replace(".location", ".password")
        raise _error(key, location, f"cannot open it as PKCS12 (wrong or missing {password_key}?)") from exc


def _pkcs12_certificates(data: bytes, password: str | None, location: str) -> str:
    """Every certificate of a PKCS12 trust store, as PEM text."""
    from cryptography.hazmat.primitives.serialization import Encoding

    store = _load_pkcs12("ssl.truststore.location", location, data, password)
    certs = [entry.certificate for entry in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        raise _error("ssl.truststore.location", location, "the trust store holds no certificate")
    return "".join(cert.public_bytes(Encoding.PEM).decode() for cert in certs)


def pkcs12_key_pem(store: KeyStore, encrypt_with: bytes) -> bytes:
    """A PKCS12 key store's key (encrypted with `encrypt_with`) and chain as one PEM blob, for Python's ssl."""
    location = store.pkcs12_location or ""
    data = _read("ssl.keystore.location", location)
    loaded = _load_pkcs12("ssl.keystore.location", location, data, store.store_password)
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    if loaded.key is None or loaded.cert is None:
        raise _error("ssl.keystore.location", location, "the key store holds no private key with a certificate")
    key = loaded.key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(encrypt_with))
    chain = [loaded.cert.certificate, *(entry.certificate for entry in loaded.additional_certs)]
    return key + b"".join(cert.public_bytes(Encoding.PEM) for cert in chain)
