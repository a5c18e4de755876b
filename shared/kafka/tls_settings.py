"""TLS settings for librdkafka and an `ssl.SSLContext` for aiokafka, from Java-style `ssl.*` properties."""

from __future__ import annotations

import contextlib
import os
import secrets
import ssl
import tempfile
from collections.abc import Mapping

from shared.errors import ConfigError
from shared.kafka.tls_stores import KeyStore, hostname_check, key_store, pkcs12_key_pem, trust_store, uses_tls


def librdkafka_tls(props: Mapping[str, str]) -> dict[str, str]:
    """librdkafka's `ssl.*` settings for a TLS protocol (nothing for a plaintext one, as Java ignores them)."""
    if not uses_tls(props):
        return {}
    out: dict[str, str] = {}
    trust = trust_store(props)
    if trust is not None and trust.location is not None:
        out["ssl.ca.location"] = trust.location
    elif trust is not None and trust.pem is not None:
        out["ssl.ca.pem"] = trust.pem
    key = key_store(props)
    if key is not None:
        out |= _librdkafka_key(key)
    out["ssl.endpoint.identification.algorithm"] = "https" if hostname_check(props) else "none"
    return out


def _librdkafka_key(key: KeyStore) -> dict[str, str]:
    out: dict[str, str] = {}
    if key.pem_location is not None:
        # One PEM file holds the key and the chain, as Java's PEM key store reads it.
        out |= {"ssl.certificate.location": key.pem_location, "ssl.key.location": key.pem_location}
    elif key.key_pem is not None and key.chain_pem is not None:
        out |= {"ssl.certificate.pem": key.chain_pem, "ssl.key.pem": key.key_pem}
    elif key.pkcs12_location is not None:
        out["ssl.keystore.location"] = key.pkcs12_location
        if key.store_password is not None:
            out["ssl.keystore.password"] = key.store_password
        return out
    if key.key_password is not None:
        out["ssl.key.password"] = key.key_password
    return out


def ssl_context(props: Mapping[str, str]) -> ssl.SSLContext:
    """The client TLS context aiokafka takes: the trust store (or system trust), the key store, hostname check."""
    trust = trust_store(props)
    context = ssl.create_default_context(
        cafile=trust.location if trust is not None else None,
        cadata=trust.pem if trust is not None else None,
    )
    context.check_hostname = hostname_check(props)
    key = key_store(props)
    if key is not None:
        _load_key(context, key)
    return context


def _load_key(context: ssl.SSLContext, key: KeyStore) -> None:
    """Load the client key; Python reads keys only from files, so inline and PKCS12 keys pass through one briefly."""
    if key.pem_location is not None:
        _load_chain(context, key.pem_location, key.key_password, ("ssl.keystore.location", key.pem_location))
        return
    if key.key_pem is not None and key.chain_pem is not None:
        blob, password = (key.key_pem.strip() + "\n" + key.chain_pem.strip() + "\n").encode(), key.key_password
        named = ("ssl.keystore.key", "<redacted>")
    else:
        one_time = secrets.token_hex(16)
        blob, password = pkcs12_key_pem(key, one_time.encode()), one_time
        named = ("ssl.keystore.location", key.pkcs12_location or "")
    descriptor, path = tempfile.mkstemp(prefix="strait-key-", suffix=".pem")  # mode 0600
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(blob)
        _load_chain(context, path, password, named)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _load_chain(context: ssl.SSLContext, path: str, password: str | None, named: tuple[str, str]) -> None:
    """Load a PEM key+chain file; errors name the user's key and value (`named`), never the key material."""
    key, value = named
    try:
        context.load_cert_chain(path, password=password)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"{key}={value}: cannot load the client key and certificate ({exc}); is ssl.key.password right?",
            key=key,
            value=value,
        ) from exc
