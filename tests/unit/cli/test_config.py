"""--command-config properties files, clusters.toml and KREPLICA_* variables."""

from __future__ import annotations

from pathlib import Path

import pytest

from kreplica.cli.config import parse_properties, resolve_source
from kreplica.errors import InputError, UsageError
from tests.unit.cli.conftest import EXAMPLE, run_cli


def test_properties_separators_comments_and_blank_lines() -> None:
    text = """
# comment
! also a comment
security.protocol=SASL_SSL
sasl.mechanism : SCRAM-SHA-512
ssl.endpoint.identification.algorithm https
empty.value=
    indented.key = spaced value
"""
    assert parse_properties(text) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "ssl.endpoint.identification.algorithm": "https",
        "empty.value": "",
        "indented.key": "spaced value",
    }


def test_properties_continuations_and_escapes() -> None:
    # The usual multi-line JAAS entry, as Kafka's docs write it.
    text = (
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="alice" \\\n'
        '    password="s3cret";\n'
        "path=C:\\\\kafka\\\\truststore.jks\n"
        "key\\=with\\:colon=v\n"
        "unicode=caf\\u00e9\n"
        "tab=a\\tb\n"
    )
    props = parse_properties(text)
    assert props["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="s3cret";'
    )
    assert props["path"] == "C:\\kafka\\truststore.jks"
    assert props["key=with:colon"] == "v"
    assert props["unicode"] == "café"
    assert props["tab"] == "a\tb"


def test_even_backslashes_do_not_continue_a_line() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def _config(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "clusters.toml"
    path.write_text(text)
    return {"KREPLICA_CONFIG": str(path)}


CLUSTERS = """
default = "offline"

[clusters.offline]
snapshot = "snap.json"

[clusters.prod]
bootstrap_server = "kafka-1:9093"
command_config = "prod.properties"
timeout_s = 30
client = { "sasl.mechanism" = "SCRAM-SHA-512" }

[clusters.legacy]
zookeeper = "zk-1:2181,zk-2:2181/kafka"
zk_auth = [["digest", "admin:pw"]]
"""


def test_named_clusters(tmp_path: Path) -> None:
    env = _config(tmp_path, CLUSTERS)
    (tmp_path / "prod.properties").write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
    prod = resolve_source(cluster="prod", env=env)
    assert prod.bootstrap_server == "kafka-1:9093" and prod.kind == "bootstrap_server"
    # inline `client` overrides the properties file it sits beside
    assert prod.client_config == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
    }
    assert prod.timeout_s == 30
    legacy = resolve_source(cluster="legacy", env=env)
    assert legacy.zookeeper == "zk-1:2181,zk-2:2181/kafka"
    assert legacy.zk_auth == [("digest", "admin:pw")]
    # the default cluster; relative paths are relative to the config file
    offline = resolve_source(env=env)
    assert offline.snapshot == str(tmp_path / "snap.json")


def test_precedence_flag_then_cluster_then_env(tmp_path: Path) -> None:
    env = {**_config(tmp_path, CLUSTERS), "KREPLICA_ZOOKEEPER": "zk-env:2181"}
    (tmp_path / "prod.properties").write_text("security.protocol=SSL\n")
    assert resolve_source(snapshot="x.json", env=env).snapshot == "x.json"
    assert resolve_source(cluster="prod", env=env).bootstrap_server == "kafka-1:9093"
    assert resolve_source(env=env).zookeeper == "zk-env:2181"  # env beats the file's default
    env_cluster = {**_config(tmp_path, CLUSTERS), "KREPLICA_CLUSTER": "legacy"}
    assert resolve_source(env=env_cluster).zookeeper == "zk-1:2181,zk-2:2181/kafka"


def test_timeout_flag_beats_the_clusters_timeout(tmp_path: Path) -> None:
    # An operator raising --timeout for a slow cluster must get it, as with --command-config.
    env = _config(tmp_path, CLUSTERS)
    (tmp_path / "prod.properties").write_text("security.protocol=SSL\n")
    assert resolve_source(cluster="prod", timeout_s=60, env=env).timeout_s == 60
    assert resolve_source(cluster="prod", env=env).timeout_s == 30
    assert resolve_source(cluster="legacy", env=env).timeout_s == 15  # the default
    assert resolve_source(snapshot="x.json", env=env).timeout_s == 15


def test_missing_properties_file_named_in_cluster(tmp_path: Path) -> None:
    env = _config(tmp_path, CLUSTERS)
    with pytest.raises(UsageError, match=r"\[clusters.prod\]: command_config .* not found"):
        resolve_source(cluster="prod", env=env)


def test_cluster_config_file_missing_or_unreadable(tmp_path: Path) -> None:
    missing = {"KREPLICA_CONFIG": str(tmp_path / "none.toml")}
    with pytest.raises(UsageError, match=r"cluster config .* not found; create it or set KREP"):
        resolve_source(cluster="prod", env=missing)
    with pytest.raises(UsageError, match="no cluster source given"):  # no file, no default
        resolve_source(env=missing)
    with pytest.raises(InputError, match="cannot read cluster config"):
        resolve_source(cluster="prod", env={"KREPLICA_CONFIG": str(tmp_path)})  # a folder


def test_env_cluster_and_env_source_conflict(tmp_path: Path) -> None:
    env = {**_config(tmp_path, CLUSTERS), "KREPLICA_CLUSTER": "prod", "KREPLICA_SNAPSHOT": "s"}
    with pytest.raises(UsageError, match="KREPLICA_CLUSTER and KREPLICA_SNAPSHOT"):
        resolve_source(env=env)


def test_command_config_flag_beats_cluster_properties(tmp_path: Path) -> None:
    env = _config(tmp_path, CLUSTERS)
    (tmp_path / "prod.properties").write_text("security.protocol=SASL_SSL\n")
    mine = tmp_path / "mine.properties"
    mine.write_text("security.protocol=SSL\n")
    spec = resolve_source(cluster="prod", command_config=str(mine), env=env)
    assert spec.client_config["security.protocol"] == "SSL"


def test_cli_reads_snapshot_from_environment() -> None:
    result = run_cli(["explain", "-t", "orders"], env={"KREPLICA_SNAPSHOT": str(EXAMPLE)})
    assert result.code == 0, result.stderr
    assert "orders" in result.stdout


def test_cli_uses_named_cluster(tmp_path: Path) -> None:
    env = _config(tmp_path, f'[clusters.demo]\nsnapshot = "{EXAMPLE}"\n')
    result = run_cli(["explain", "--cluster", "demo", "-t", "orders", "--output", "json"], env=env)
    assert result.code == 0, result.stderr
    assert "from cluster 'demo'" in result.json()["data"]["source"]


def test_output_format_from_environment() -> None:
    result = run_cli(
        ["explain", "--snapshot", str(EXAMPLE), "-t", "orders"], env={"KREPLICA_OUTPUT": "json"}
    )
    assert result.json()["command"] == "explain"


def test_shipped_example_config_resolves() -> None:
    env = {"KREPLICA_CONFIG": str(EXAMPLE.parent / "clusters.toml")}
    assert resolve_source(env=env).snapshot == str(EXAMPLE)  # the default cluster
    prod = resolve_source(cluster="prod-eu", env=env)
    assert prod.client_config["sasl.mechanism"] == "SCRAM-SHA-512"  # inline beats the file
    assert prod.client_config["sasl.jaas.config"].endswith('password="change-me";')
    assert resolve_source(cluster="legacy", env=env).zk_auth == [("digest", "kreplica:secret")]


def test_shipped_example_client_properties_are_usable() -> None:
    from kreplica.sources.clientconfig import confluent_config, kafka_python_config

    # Copied as a starting point, the example must not be one kreplica refuses.
    env = {"KREPLICA_CONFIG": str(EXAMPLE.parent / "clusters.toml")}
    prod = resolve_source(cluster="prod-eu", env=env)
    assert confluent_config(prod.bootstrap_server or "", prod.client_config)["sasl.password"]
    python_config = kafka_python_config("b:9093", prod.client_config, 15)
    assert python_config["security_protocol"] == "SASL_SSL"
    assert python_config["ssl_cafile"]


def test_zookeeper_with_bootstrap_server_keeps_both_and_other_pairs_are_refused() -> None:
    # ZooKeeper for the assignment, the brokers for the disk figures ZooKeeper lacks
    spec = resolve_source(zookeeper="zk:2181", bootstrap_server="kafka:9092", env={})
    assert spec.kind == "zookeeper"
    assert (spec.zookeeper, spec.bootstrap_server) == ("zk:2181", "kafka:9092")
    assert spec.snapshot is None
    for pair in ({"snapshot": "s.json", "zookeeper": "zk:2181"},
                 {"snapshot": "s.json", "bootstrap_server": "kafka:9092"}):  # fmt: skip
        with pytest.raises(UsageError, match="both given; pass exactly one cluster source"):
            resolve_source(**pair, env={})  # type: ignore[arg-type]
