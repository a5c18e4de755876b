"""The translator refuses a bearer token that guards nothing: a placeholder a template ships (`change-me-token`) or
one shorter than 16 characters, from the environment or from the token file, naming where it came from and never
the token itself; a process given one exits 2 before it serves anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from services.offset_translator.settings import MIN_TOKEN_CHARS, TranslatorSettings, weak_token
from shared.errors import ConfigError
from tests.unit.services.offset_translator.conftest import CONFIG_TEXT, build_app

PLACEHOLDERS = (
    "change-me-token",  # what deploy/kubernetes/secret.yaml shipped
    "CHANGEME-0123456789abcdef",
    "please_change_me_0123456789",
    "change me before you deploy this",
    "replace-me-with-a-real-token",
    "<placeholder-for-the-translator-token>",
)


@pytest.mark.parametrize("token", PLACEHOLDERS)
def test_a_placeholder_token_stops_the_translator_naming_the_problem(token: str) -> None:
    with pytest.raises(ConfigError, match="placeholder") as refused:
        build_app(translator_token=token)
    assert refused.value.key == "translator_token"
    assert "STRAIT_TRANSLATOR_TOKEN" in str(refused.value)
    assert token not in str(refused.value)


def test_a_token_shorter_than_16_characters_is_refused_and_16_are_enough() -> None:
    short = "x7Gq-2pLm-9Rt4e"  # 15
    assert len(short) == MIN_TOKEN_CHARS - 1
    with pytest.raises(ConfigError, match=f"has 15 characters, fewer than {MIN_TOKEN_CHARS}") as refused:
        build_app(translator_token=short)
    assert short not in str(refused.value), "a real but short token stays out of the message"
    assert build_app(translator_token=short + "K").state.token_check.has_token


def test_a_weak_token_in_the_token_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    token_file = tmp_path / "translator-token"
    token_file.write_text("change-me-token\n")
    settings = TranslatorSettings(config=Path("x"), translator_token=None, translator_token_file=token_file)
    with pytest.raises(ConfigError, match="placeholder") as refused:
        settings.token()
    assert refused.value.key == "translator_token_file"
    assert str(token_file) in str(refused.value)


def test_an_empty_token_file_is_refused_not_taken_for_no_token(tmp_path: Path) -> None:
    """A Secret created with an empty key would otherwise start a translator without its token, silently."""
    token_file = tmp_path / "translator-token"
    token_file.write_text("\n")
    with pytest.raises(ConfigError, match="its first line is empty"):
        build_app(translator_token_file=token_file)


def test_strong_tokens_and_no_token_are_accepted() -> None:
    assert weak_token("Zb1Vq8n0cT3yP5wK7mR2xS4uA6dF9gH0") is None
    assert weak_token("s3cret-token-value") is None
    assert not build_app().state.token_check.has_token, "no token: failover off beyond loopback, DR off"


def test_the_process_exits_2_with_one_line_before_it_serves(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(CONFIG_TEXT)
    done = subprocess.run(
        [sys.executable, "-m", "services.offset_translator", "--config", str(config), "--port", "0"],
        env={**os.environ, "STRAIT_TRANSLATOR_TOKEN": "change-me-token"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is a placeholder" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
