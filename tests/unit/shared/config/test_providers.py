"""`${env:...}` and `${file:...:...}` references: resolution, declared aliases, restrictions, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.config import load_mm2_config, parse_mm2_config, resolve_references
from shared.errors import ConfigError


@pytest.fixture
def secrets_file(tmp_path: Path) -> Path:
    path = tmp_path / "secrets.properties"
    path.write_text("user = alice\npassword = s3cr3t-from-file\n", encoding="utf-8")
    return path


def test_env_reference_is_resolved() -> None:
    resolved = resolve_references({"A.bootstrap.servers": "${env:A_SERVERS}"}, env={"A_SERVERS": "a:9092"})
    assert resolved == {"A.bootstrap.servers": "a:9092"}


def test_file_reference_is_resolved(secrets_file: Path) -> None:
    resolved = resolve_references({"A.ssl.key.password": f"${{file:{secrets_file}:password}}"}, env={})
    assert resolved == {"A.ssl.key.password": "s3cr3t-from-file"}


def test_several_references_inside_one_value(secrets_file: Path) -> None:
    value = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="${{file:{secrets_file}:user}}" password="${{env:PW}}";'
    )
    resolved = resolve_references({"A.sasl.jaas.config": value}, env={"PW": "pw"})
    assert resolved["A.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="pw";'
    )


def test_values_without_references_and_provider_declarations_are_kept() -> None:
    props = {"config.providers": "file,env", "config.providers.file.class": "${not:resolved}", "x": "plain $ {x}"}
    assert resolve_references(props, env={}) == props


def test_resolution_is_one_pass() -> None:
    resolved = resolve_references({"a": "${env:OUTER}"}, env={"OUTER": "${env:INNER}", "INNER": "no"})
    assert resolved == {"a": "${env:INNER}"}


def test_unknown_provider_names_key_and_provider() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_references({"A.ssl.key.password": "${vault:secret/kafka:pw}"}, env={})
    assert str(info.value) == (
        "A.ssl.key.password references ${vault:secret/kafka:pw}: unknown config provider 'vault' (available: env, file)"
    )
    assert info.value.key == "A.ssl.key.password"


def test_missing_env_var_names_key_and_variable() -> None:
    with pytest.raises(ConfigError, match=r"^B\.sasl\.jaas\.config references \$\{env:JAAS\}: .*JAAS is not set$"):
        resolve_references({"B.sasl.jaas.config": "${env:JAAS}"}, env={"OTHER": "x"})


def test_missing_file_names_key_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(ConfigError) as info:
        resolve_references({"A.ssl.truststore.password": f"${{file:{missing}:pw}}"}, env={})
    message = str(info.value)
    assert message.startswith("A.ssl.truststore.password references ")
    assert str(missing) in message
    assert "No such file" in message


def test_missing_key_in_file_names_key_and_path(secrets_file: Path) -> None:
    with pytest.raises(ConfigError, match=r"^A\.x references .*: key 'token' not found in .*secrets\.properties$"):
        resolve_references({"A.x": f"${{file:{secrets_file}:token}}"}, env={})


def test_file_reference_without_path_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"expected \$\{file:<path>:<key>\}"):
        resolve_references({"a": "${file:password}"}, env={})


def test_env_reference_with_path_is_an_error() -> None:
    with pytest.raises(ConfigError, match="the env provider takes no path"):
        resolve_references({"a": "${env:some/path:NAME}"}, env={"NAME": "x"})


def test_declared_provider_alias_is_honoured(secrets_file: Path) -> None:
    props = {
        "config.providers": "secrets,environment",
        "config.providers.secrets.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.environment.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        "a": f"${{secrets:{secrets_file}:user}}",
        "b": "${environment:HOME_DIR}",
    }
    resolved = resolve_references(props, env={"HOME_DIR": "/home/x"})
    assert (resolved["a"], resolved["b"]) == ("alice", "/home/x")


def test_provider_with_unsupported_class_is_explained() -> None:
    props = {"config.providers.vault.class": "io.example.VaultConfigProvider", "a": "${vault:path:key}"}
    with pytest.raises(ConfigError, match=r"class io\.example\.VaultConfigProvider, but Strait supports only"):
        resolve_references(props, env={})


def test_allowed_paths_restrict_file_provider(secrets_file: Path, tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    props = {"config.providers.file.param.allowed.paths": str(allowed), "a": f"${{file:{secrets_file}:user}}"}
    with pytest.raises(ConfigError, match=r"is outside config\.providers\.file\.param\.allowed\.paths"):
        resolve_references(props, env={})
    inside = allowed / "s.properties"
    inside.write_text("user=bob\n", encoding="utf-8")
    props["a"] = f"${{file:{allowed}/../allowed/s.properties:user}}"
    assert resolve_references(props, env={})["a"] == "bob"


def test_allowed_paths_must_be_absolute() -> None:
    with pytest.raises(ConfigError, match="is not absolute"):
        resolve_references({"config.providers.file.param.allowed.paths": "relative/dir"}, env={})


def test_env_allowlist_pattern_restricts_variables() -> None:
    props = {"config.providers.env.param.allowlist.pattern": "KAFKA_.*", "a": "${env:KAFKA_PW}", "b": "${env:HOME}"}
    with pytest.raises(ConfigError, match=r"^b references \$\{env:HOME\}: .*does not match"):
        resolve_references(props, env={"KAFKA_PW": "x", "HOME": "/root"})
    del props["b"]
    assert resolve_references(props, env={"KAFKA_PW": "x"})["a"] == "x"


DIRECTORY_PROVIDER = {
    "config.providers": "dir",
    "config.providers.dir.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
}


def test_directory_provider_reads_a_whole_file(tmp_path: Path) -> None:
    # As Kubernetes mounts a Secret: one file per key, the file's content (newline included) is the value.
    (tmp_path / "jaas").write_text('ScramLoginModule required username="u" password="p";\n', encoding="utf-8")
    (tmp_path / "password").write_text("s3cr3t", encoding="utf-8")
    props = {
        **DIRECTORY_PROVIDER,
        "A.sasl.jaas.config": f"${{dir:{tmp_path}:jaas}}",
        "b": f"x-${{dir:{tmp_path}:password}}",
    }
    resolved = resolve_references(props, env={})
    assert resolved["A.sasl.jaas.config"] == 'ScramLoginModule required username="u" password="p";\n'
    assert resolved["b"] == "x-s3cr3t"


def test_directory_provider_errors_name_key_and_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with pytest.raises(ConfigError, match=r"^a references .*: no file 'absent' in "):
        resolve_references({**DIRECTORY_PROVIDER, "a": f"${{dir:{tmp_path}:absent}}"}, env={})
    with pytest.raises(ConfigError, match=r"no file 'sub' in "):  # directories are not values, as in Kafka
        resolve_references({**DIRECTORY_PROVIDER, "a": f"${{dir:{tmp_path}:sub}}"}, env={})
    with pytest.raises(ConfigError, match=r"is not a directory"):
        resolve_references({**DIRECTORY_PROVIDER, "a": f"${{dir:{tmp_path}/nowhere:x}}"}, env={})


def test_directory_provider_is_there_only_when_declared(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown config provider 'dir'"):
        resolve_references({"a": f"${{dir:{tmp_path}:x}}"}, env={})


def test_allowed_paths_restrict_directory_provider(tmp_path: Path) -> None:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "pw").write_text("x", encoding="utf-8")
    props = {
        **DIRECTORY_PROVIDER,
        "config.providers.dir.param.allowed.paths": str(allowed),
        "a": f"${{dir:{outside}:pw}}",
    }
    with pytest.raises(ConfigError, match=r"is outside config\.providers\.dir\.param\.allowed\.paths"):
        resolve_references(props, env={})


def test_an_mm2_file_with_a_declared_file_provider_resolves_client_secrets(tmp_path: Path) -> None:
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="pw-a";'
    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f"a.jaas={jaas}\n", encoding="utf-8")
    props = {
        "clusters": "A, B",
        "A.bootstrap.servers": "a:9093",
        "B.bootstrap.servers": "b:9093",
        "config.providers": "file",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "A.security.protocol": "SASL_SSL",
        "A.sasl.jaas.config": f"${{file:{secrets}:a.jaas}}",
        "A->B.enabled": "true",
    }
    config = parse_mm2_config(props, env={})
    assert config.clusters["A"].consumer_props()["sasl.jaas.config"] == jaas
    assert config.flow("A", "B").source_consumer_props()["sasl.jaas.config"] == jaas


def test_with_config_providers_set_the_built_in_file_and_env_are_refused(secrets_file: Path, tmp_path: Path) -> None:
    # Kafka resolves only the providers config.providers lists: declaring a restricted `dir` does not leave
    # `file` and `env` open to read any path or variable.
    restricted = {**DIRECTORY_PROVIDER, "config.providers.dir.param.allowed.paths": str(tmp_path)}
    for key, reference, provider in (
        ("A.ssl.key.password", f"${{file:{secrets_file}:password}}", "file"),
        ("A.sasl.jaas.config", "${env:HOME}", "env"),
    ):
        with pytest.raises(ConfigError) as info:
            resolve_references({**restricted, key: reference}, env={"HOME": "/root"})
        assert str(info.value).startswith(f"{key} references {reference}: config provider '{provider}' is not ")
        assert "config.providers=dir" in str(info.value)
        assert info.value.key == key


def test_with_config_providers_set_a_provider_must_be_listed_and_have_a_class(secrets_file: Path) -> None:
    file_class = "org.apache.kafka.common.config.provider.FileConfigProvider"
    unlisted = {
        **DIRECTORY_PROVIDER,
        "config.providers.secrets.class": file_class,
        "a": f"${{secrets:{secrets_file}:user}}",
    }
    with pytest.raises(
        ConfigError, match=r"^a references .*: config provider 'secrets' is not listed in config\.providers=dir"
    ):
        resolve_references(unlisted, env={})
    classless = {"config.providers": "dir, file", "a": f"${{file:{secrets_file}:user}}"}
    with pytest.raises(ConfigError, match=r"'file' is listed in config\.providers but its \.class is unset"):
        resolve_references(classless, env={})
    declared = {**classless, "config.providers.file.class": file_class}
    assert resolve_references(declared, env={})["a"] == "alice"


def test_an_empty_config_providers_declares_none(secrets_file: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"config provider 'file' is not listed in config\.providers, which lists none"
    ):
        resolve_references({"config.providers": "", "a": f"${{file:{secrets_file}:user}}"}, env={})


def test_an_mm2_file_declaring_only_a_directory_provider_cannot_read_other_files(tmp_path: Path) -> None:
    outside = tmp_path / "outside.properties"
    outside.write_text("pw = not-for-you\n", encoding="utf-8")
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\n"
        "config.providers = dir\n"
        "config.providers.dir.class = org.apache.kafka.common.config.provider.DirectoryConfigProvider\n"
        f"A.ssl.key.password = ${{file:{outside}:pw}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"^A\.ssl\.key\.password references .*config provider 'file' is not listed"):
        load_mm2_config(config, env={})
