"""Test certificates for TLS brokers: a throw-away CA and a 127.0.0.1/localhost server certificate (trustme).

trustme is a test dependency, so it is imported only when a TLS cluster is asked for.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of one cluster: the CA clients trust, and the brokers' key with its certificate chain."""

    ca: Path
    server: Path


def make_tls_files(directory: Path) -> TlsFiles:
    """Write a CA and a broker key+chain into `directory` once; later calls reuse them (restarts keep trust)."""
    files = TlsFiles(ca=directory / "ca.pem", server=directory / "server.pem")
    if files.ca.exists() and files.server.exists():
        return files
    import trustme
    from cryptography.hazmat.primitives import serialization

    directory.mkdir(parents=True, exist_ok=True)
    authority = trustme.CA(organization_name="strait test CA")
    leaf = authority.issue_cert("127.0.0.1", "localhost", common_name="127.0.0.1")
    # Kafka's PEM key store reads only PKCS#8 keys; trustme writes the traditional EC format.
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    descriptor = os.open(files.server, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(pkcs8 + b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    authority.cert_pem.write_to_path(str(files.ca))
    return files
