"""TLS settings from an MM2 file (PEM, PKCS12 and JKS stores) reach librdkafka and aiokafka with their meaning."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Producer
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12

from shared.errors import ConfigError
from shared.kafka.client_props import to_aiokafka, to_librdkafka

SASL_SSL = {
    "bootstrap.servers": "127.0.0.1:1",
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-256",
    "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";',
}


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA(organization_name="strait unit CA")


@pytest.fixture(scope="module")
def ca_pem(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tls") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return path


@pytest.fixture(scope="module")
def client_pem(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A client key (PKCS#8, as Java's PEM key store wants it) and its chain in one file."""
    leaf = ca.issue_cert("mirror-client")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = tmp_path_factory.mktemp("tls") / "client.pem"
    path.write_bytes(pkcs8 + b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    return path


def _keytool(*args: str) -> None:
    """Java's own keytool, so the stores are the ones a Java MM2 deployment has."""
    if shutil.which("keytool") is None:
        pytest.skip("keytool (Java) is not installed")
    subprocess.run(["keytool", "-noprompt", *args], check=True, capture_output=True, timeout=60)


def _trusted_subjects(context: ssl.SSLContext) -> list[str]:
    return [str(cert["subject"]) for cert in context.get_ca_certs()]


def _accepted_by_librdkafka(settings: dict[str, object]) -> None:
    """librdkafka loads certificates and keys when a client is made, so a wrong name or file fails here."""
    offline = {key: value for key, value in settings.items() if key != "bootstrap.servers"}
    Producer({**offline, "log_level": 3}).flush(0)  # no broker to try, no notice about that


def test_sasl_ssl_with_a_pem_truststore(ca_pem: Path) -> None:
    props = {**SASL_SSL, "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca_pem)}
    rdkafka = to_librdkafka(props)
    assert rdkafka.ignored == ()
    assert rdkafka.settings["ssl.ca.location"] == str(ca_pem)
    assert rdkafka.settings["ssl.endpoint.identification.algorithm"] == "https"
    assert rdkafka.settings["security.protocol"] == "SASL_SSL"
    _accepted_by_librdkafka(rdkafka.settings)
    aio = to_aiokafka(props)
    assert aio.ignored == ()
    context = aio.settings["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname is True
    assert any("strait unit CA" in subject for subject in _trusted_subjects(context))
    assert aio.settings["security_protocol"] == "SASL_SSL"


def test_an_empty_endpoint_identification_turns_the_hostname_check_off(ca_pem: Path) -> None:
    props = {
        **SASL_SSL,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_pem),
        "ssl.endpoint.identification.algorithm": "",
    }
    assert to_librdkafka(props).settings["ssl.endpoint.identification.algorithm"] == "none"
    context = to_aiokafka(props).settings["ssl_context"]
    assert context.check_hostname is False
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_inline_trusted_certificates(ca: trustme.CA) -> None:
    pem = ca.cert_pem.bytes().decode()
    props = {**SASL_SSL, "ssl.truststore.type": "PEM", "ssl.truststore.certificates": pem}
    settings = to_librdkafka(props).settings
    assert settings["ssl.ca.pem"] == pem
    _accepted_by_librdkafka(settings)
    assert any("strait unit CA" in s for s in _trusted_subjects(to_aiokafka(props).settings["ssl_context"]))


def test_plaintext_ignores_tls_settings_as_java_does() -> None:
    props = {"bootstrap.servers": "h:1", "ssl.truststore.location": "/absent.jks", "ssl.keystore.password": "x"}
    assert to_librdkafka(props).settings == {"bootstrap.servers": "h:1"}
    assert to_librdkafka(props).ignored == ()
    assert "ssl_context" not in to_aiokafka(props).settings


@pytest.mark.parametrize(("store_type", "declared"), [("JKS", "JKS"), ("PKCS12", "PKCS12"), ("PKCS12", "JKS")])
def test_java_truststores_are_converted_to_pem(ca_pem: Path, tmp_path: Path, store_type: str, declared: str) -> None:
    # The JDK reads either format whatever the declared type says; so do we.
    store = tmp_path / "truststore"
    _keytool(
        "-importcert", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(store),
        "-storetype", store_type, "-storepass", "changeit",
    )  # fmt: skip
    props = {
        **SASL_SSL,
        "ssl.truststore.type": declared,
        "ssl.truststore.location": str(store),
        "ssl.truststore.password": "changeit",
    }
    settings = to_librdkafka(props).settings
    expected = x509.load_pem_x509_certificate(ca_pem.read_bytes())
    assert [x509.load_pem_x509_certificate(settings["ssl.ca.pem"].encode())] == [expected]
    _accepted_by_librdkafka(settings)
    assert any("strait unit CA" in s for s in _trusted_subjects(to_aiokafka(props).settings["ssl_context"]))


@pytest.mark.parametrize("store_type", ["JKS", "PKCS12"])
def test_a_wrong_truststore_password_names_the_key(ca_pem: Path, tmp_path: Path, store_type: str) -> None:
    store = tmp_path / "truststore"
    _keytool(
        "-importcert", "-alias", "ca", "-file", str(ca_pem), "-keystore", str(store),
        "-storetype", store_type, "-storepass", "changeit",
    )  # fmt: skip
    props = {**SASL_SSL, "ssl.truststore.location": str(store), "ssl.truststore.password": "wrong-one"}
    with pytest.raises(
        ConfigError, match=r"^ssl\.truststore\.location=.*truststore: .*ssl\.truststore\.password"
    ) as info:
        to_librdkafka(props)
    assert "wrong-one" not in str(info.value)


def test_a_pem_keystore_file_gives_both_clients_the_client_certificate(ca_pem: Path, client_pem: Path) -> None:
    props = {
        **SASL_SSL,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_pem),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(client_pem),
    }
    settings = to_librdkafka(props).settings
    assert settings["ssl.certificate.location"] == settings["ssl.key.location"] == str(client_pem)
    assert "ssl.keystore.location" not in settings  # librdkafka would read it as PKCS#12
    _accepted_by_librdkafka(settings)
    to_aiokafka(props)  # loads the chain into the context, or raises


def test_an_inline_pem_key_and_chain(ca_pem: Path, client_pem: Path) -> None:
    text = client_pem.read_text()
    split = text.index("-----BEGIN CERTIFICATE-----")
    props = {
        **SASL_SSL,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_pem),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": text[:split],
        "ssl.keystore.certificate.chain": text[split:],
    }
    settings = to_librdkafka(props).settings
    assert settings["ssl.key.pem"] == text[:split]
    assert settings["ssl.certificate.pem"] == text[split:]
    _accepted_by_librdkafka(settings)
    to_aiokafka(props)
    del props["ssl.keystore.key"]
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.key is missing"):
        to_librdkafka(props)


def test_a_pkcs12_keystore_is_read_natively_by_librdkafka_and_converted_for_aiokafka(
    ca_pem: Path, client_pem: Path, tmp_path: Path
) -> None:
    blob = client_pem.read_bytes()
    key = serialization.load_pem_private_key(blob, password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    certs = x509.load_pem_x509_certificates(blob)
    store = tmp_path / "keystore.p12"
    store.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"client", key, certs[0], certs[1:], serialization.BestAvailableEncryption(b"store-pw")
        )
    )
    props = {
        **SASL_SSL,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca_pem),
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(store),
        "ssl.keystore.password": "store-pw",
    }
    settings = to_librdkafka(props).settings
    assert (settings["ssl.keystore.location"], settings["ssl.keystore.password"]) == (str(store), "store-pw")
    _accepted_by_librdkafka(settings)
    to_aiokafka(props)
    with pytest.raises(ConfigError, match=r"wrong or missing ssl\.keystore\.password"):
        to_aiokafka({**props, "ssl.keystore.password": "nope"})


def test_a_jks_keystore_is_refused_with_the_conversion_command(tmp_path: Path) -> None:
    store = tmp_path / "keystore.jks"
    _keytool(
        "-genkeypair", "-alias", "client", "-keyalg", "EC", "-dname", "CN=client", "-keystore", str(store),
        "-storetype", "JKS", "-storepass", "changeit", "-keypass", "changeit",
    )  # fmt: skip
    props = {**SASL_SSL, "ssl.keystore.location": str(store), "ssl.keystore.password": "changeit"}
    with pytest.raises(ConfigError, match=r"keytool -importkeystore -srckeystore .*keystore\.jks") as info:
        to_librdkafka(props)
    assert info.value.key == "ssl.keystore.location"


def test_a_pem_file_without_the_pem_type_is_named(ca_pem: Path, client_pem: Path) -> None:
    # Java's default store type is JKS, so a PEM file needs the type; the error says which setting is missing.
    with pytest.raises(ConfigError, match=r"this is a PEM file: set ssl\.truststore\.type=PEM"):
        to_librdkafka({**SASL_SSL, "ssl.truststore.location": str(ca_pem)})
    with pytest.raises(ConfigError, match=r"this is a PEM file: set ssl\.keystore\.type=PEM"):
        to_aiokafka({**SASL_SSL, "ssl.keystore.location": str(client_pem), "ssl.keystore.type": "PKCS12"})
