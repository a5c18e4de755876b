"""The translator over HTTPS: given a certificate it serves its API only with TLS, and a certificate that does not
load stops it before it starts, naming the file. The clusters are unreachable: /health answers without them."""

from __future__ import annotations

import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from shared.localkafka.ports import free_port
from shared.localkafka.tls import make_tls_files
from tests.unit.services.offset_translator.conftest import CONFIG_TEXT


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    config = tmp_path / "mm2.properties"
    config.write_text(CONFIG_TEXT)
    port = free_port()
    command = [sys.executable, "-m", "services.offset_translator", "--config", str(config), "--port", str(port)]
    process = subprocess.Popen([*command, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return process, port


def test_with_a_certificate_it_answers_over_https_only(tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path / "tls")
    process, port = _start(tmp_path, "--tls-cert-file", str(tls.server))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.get(
                    f"https://127.0.0.1:{port}/health", verify=ssl.create_default_context(cafile=str(tls.ca)), timeout=5
                )
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()[0]
                assert time.monotonic() < deadline, "the translator did not answer over HTTPS"
                time.sleep(0.2)
        assert answer.status_code == 200
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)  # plain HTTP to a TLS port gets no answer
        with pytest.raises(httpx.TransportError):
            httpx.get(f"https://127.0.0.1:{port}/health", timeout=5)  # a client that does not trust the CA
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=60)[0]
    assert process.returncode == 0, output
    assert '"scheme": "https"' in output


def test_a_certificate_that_does_not_load_stops_the_start_naming_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "broken.pem"
    broken.write_text("-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n")
    process, _ = _start(tmp_path, "--tls-cert-file", str(broken))
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 2, output
    assert f"{broken}: not a PEM certificate chain with its key" in output
    assert "Traceback" not in output
