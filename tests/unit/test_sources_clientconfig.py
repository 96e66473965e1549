"""Client properties mapped onto confluent-kafka, kafka-python and kazoo; shared source helpers."""

from __future__ import annotations

import pytest

from kreplica.errors import UnknownTopicError, UsageError
from kreplica.model import Broker, Partition, Topic
from kreplica.sources.admin import replica_sizes
from kreplica.sources.assemble import assemble_snapshot, select_topics
from kreplica.sources.clientconfig import (
    confluent_config,
    jaas_credentials,
    kafka_python_config,
    zookeeper_options,
)

SASL_FILE = {
    "security.protocol": "SASL_SSL",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="alice" password="s3\\"cret";'
    ),
    "ssl.ca.location": "/etc/ca.pem",
    "zookeeper.digest": "admin:pw",
}


def test_java_command_config_for_librdkafka() -> None:
    config = confluent_config("h1:9092,h2:9092", SASL_FILE)
    assert config == {
        "bootstrap.servers": "h1:9092,h2:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 's3"cret',
        "ssl.ca.location": "/etc/ca.pem",
    }


def test_same_file_for_kafka_python() -> None:
    config = kafka_python_config("h1:9092,h2:9092", SASL_FILE, timeout_s=5)
    assert config["bootstrap_servers"] == ["h1:9092", "h2:9092"]
    assert config["security_protocol"] == "SASL_SSL"
    assert config["sasl_mechanism"] == "SCRAM-SHA-512"
    assert config["sasl_plain_username"] == "alice"
    assert config["sasl_plain_password"] == 's3"cret'
    assert config["ssl_cafile"] == "/etc/ca.pem"
    assert config["request_timeout_ms"] == 5000


def test_kafka_python_accepts_every_mapped_keyword() -> None:
    from kreplica.sources.admin_kafka_python import import_kafka_python

    import_kafka_python()
    from kafka import KafkaAdminClient

    config = kafka_python_config(
        "h:1",
        {
            **SASL_FILE,
            "client.id": "x",
            "ssl.certificate.location": "c",
            "ssl.key.location": "k",
            "ssl.key.password": "p",
            "ssl.crl.location": "r",
            "sasl.kerberos.service.name": "kafka",
            "ssl.endpoint.identification.algorithm": "none",
        },
        timeout_s=1,
    )
    assert set(config) <= set(KafkaAdminClient.DEFAULT_CONFIG)
    assert config["ssl_check_hostname"] is False


def test_java_only_properties_are_refused_with_the_alternative() -> None:
    with pytest.raises(UsageError, match=r"ssl\.truststore\.location is Java-only.*ssl\.ca"):
        confluent_config("h:1", {"ssl.truststore.location": "/x.jks"})


def test_jaas_without_credentials() -> None:
    with pytest.raises(UsageError, match="PLAIN and SCRAM"):
        jaas_credentials("com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;")


def test_zookeeper_digest_from_auth_and_config() -> None:
    options = zookeeper_options(SASL_FILE, [("digest", "ops:secret")])
    assert options == {"auth_data": [("digest", "ops:secret"), ("digest", "admin:pw")]}


def test_zookeeper_sasl_and_tls() -> None:
    options = zookeeper_options(
        {
            "zookeeper.sasl.mechanism": "digest-md5",
            "zookeeper.sasl.username": "kafka",
            "zookeeper.sasl.password": "pw",
            "zookeeper.ssl.client.enable": "true",
            "zookeeper.ssl.ca.location": "/ca.pem",
        },
        None,
    )
    assert options == {
        "sasl_options": {
            "mechanism": "DIGEST-MD5",
            "username": "kafka",
            "password": "pw",
            "service": "zookeeper",
        },
        "use_ssl": True,
        "ca": "/ca.pem",
        "check_hostname": True,
    }


def test_zookeeper_options_are_kazoo_keywords() -> None:
    import inspect

    from kazoo.client import KazooClient

    options = zookeeper_options(
        {
            "zookeeper.sasl.mechanism": "GSSAPI",
            "zookeeper.sasl.principal": "me@REALM",
            "zookeeper.ssl.client.enable": "true",
            "zookeeper.ssl.certificate.location": "c",
            "zookeeper.ssl.key.location": "k",
            "zookeeper.ssl.key.password": "p",
        },
        [("digest", "a:b")],
    )
    assert set(options) <= set(inspect.signature(KazooClient.__init__).parameters)


@pytest.mark.parametrize(
    ("config", "auth", "fragment"),
    [
        ({"zookeeper.sasl.mechanism": "PLAIN"}, None, "not supported"),
        ({"zookeeper.sasl.mechanism": "DIGEST-MD5"}, None, "needs zookeeper.sasl.username"),
        ({"zookeeper.chroot": "/x"}, None, "unknown ZooKeeper client config zookeeper.chroot"),
        ({"zookeeper.ssl.client.enable": "maybe"}, None, "must be true or false"),
        (None, [("digest", "nopassword")], "user:password"),
        (None, [("digest",)], "must be (scheme, credential)"),
    ],
)
def test_bad_zookeeper_options(
    config: dict[str, str] | None, auth: list[tuple[str, str]] | None, fragment: str
) -> None:
    with pytest.raises(UsageError) as err:
        zookeeper_options(config, auth)
    assert fragment in str(err.value)


def test_select_topics() -> None:
    assert select_topics(["b", "a", "c"], None) == ["a", "b", "c"]
    assert select_topics(["b", "a", "c"], ["c", "a", "c"]) == ["a", "c"]
    assert select_topics(["ab", "a", "b"], "ab") == ["ab"]
    with pytest.raises(UnknownTopicError, match=r"topic 'x', 'y' do not exist.*topics: a, b"):
        select_topics(["b", "a"], ["y", "a", "x"])


def test_assemble_adds_dead_brokers_and_sorts() -> None:
    topic = Topic(name="t", partitions=(Partition(topic="t", partition=0, replicas=(9, 2)),))
    other = Topic(name="a", partitions=())
    snap = assemble_snapshot(
        brokers=[Broker(id=2, rack="b"), Broker(id=1, rack="a")],
        topics=[topic, other],
        cluster_id="c",
        source="zookeeper",
        captured_at="2026-01-01T00:00:00Z",
    )
    assert snap.brokers == (Broker(1, "a"), Broker(2, "b"), Broker(9, alive=False))
    assert [t.name for t in snap.topics] == ["a", "t"]


def _log_dir(path: str, error: int, partitions: list[tuple[int, int, bool]]) -> dict[str, object]:
    rows = [
        {"partition_index": p, "partition_size": size, "is_future_key": future}
        for p, size, future in partitions
    ]
    return {"error_code": error, "log_dir": path, "topics": [{"name": "t", "partitions": rows}]}


def test_replica_sizes_largest_replica_and_no_future_logs() -> None:
    log_dirs = [
        {"broker": 1, "log_dirs": [_log_dir("/d1", 0, [(0, 100, False), (1, 999, True)])]},
        {
            "broker": 2,
            "log_dirs": [
                _log_dir("/d", 0, [(0, 70, False), (1, 5, False)]),
                _log_dir("/offline", 57, [(0, 12345, False)]),
            ],
        },
    ]
    assert replica_sizes(log_dirs) == {("t", 0): 100, ("t", 1): 5}


def test_broker_log_dirs_come_from_describe_log_dirs_answers() -> None:
    from kreplica.sources.admin import broker_log_dirs

    answer = [
        {"broker": 2, "log_dirs": [{"log_dir": "/d/b", "error_code": 0}, {"log_dir": "/d/a"}]},
        {"broker": 1, "log_dirs": []},
        {"log_dirs": [{"log_dir": "/orphan"}]},  # no broker id: nothing to attach it to
    ]
    assert broker_log_dirs(answer) == {2: ("/d/a", "/d/b"), 1: ()}
