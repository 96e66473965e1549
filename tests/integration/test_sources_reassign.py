"""A reassignment really in flight (held back by a 1 byte/s replication throttle), and replica
sizes: both sources must report what Kafka is doing (KIP-455 adding/removing replicas)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from kreplica.model import ClusterSnapshot
from kreplica.sandbox import SandboxInfo
from kreplica.sources.admin import AdminSource
from kreplica.sources.admin_kafka_python import import_kafka_python
from kreplica.sources.zookeeper import ZooKeeperSource
from kreplica.testing import TopicSpec, create_topics
from tests.support.groups import per_mode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

PAYLOAD_BYTES = 3_000_000  # several fetches' worth, so a 1 B/s throttle holds the move back


def _produce(bootstrap: str, topic: str, total: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    chunk = b"x" * 10_000
    for _ in range(total // len(chunk)):
        producer.produce(topic, chunk, partition=0)
        producer.poll(0)
    remaining = producer.flush(30)
    producer.close()  # a producer left open logs to stderr once its cluster is gone
    assert remaining == 0


def _alter_configs(bootstrap: str, changes: list[tuple[str, str, dict[str, str | None]]]) -> None:
    """(resource type, name, {key: value or None to delete}) via IncrementalAlterConfigs."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resources = []
    for kind, name, values in changes:
        entries = [
            ConfigEntry(
                key,
                value or "",
                incremental_operation=(
                    AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
                ),
            )
            for key, value in values.items()
        ]
        resources.append(ConfigResource(kind, name, incremental_configs=entries))
    for resource in resources:  # librdkafka allows one BROKER resource per call
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=30)


def _kafka_python_admin(bootstrap: str) -> Any:
    import_kafka_python()
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap.split(","))


@pytest.fixture(params=per_mode("cluster"))
def moving_topic(request: pytest.FixtureRequest) -> Iterator[tuple[SandboxInfo, str]]:
    """A one-partition topic with data on broker 1, being moved to broker 2 under a throttle."""
    info: SandboxInfo = request.getfixturevalue(f"{request.param}_cluster")
    topic = f"sources-moving-{uuid.uuid4().hex[:6]}"
    bootstrap = info.bootstrap_servers
    create_topics(bootstrap, [TopicSpec(topic, assignment={0: [1]})])
    _produce(bootstrap, topic, PAYLOAD_BYTES)
    brokers = [str(b.id) for b in info.brokers]
    rate = {"leader.replication.throttled.rate": "1", "follower.replication.throttled.rate": "1"}
    throttled = {
        "leader.replication.throttled.replicas": "0:1",
        "follower.replication.throttled.replicas": "0:2",
    }
    _alter_configs(
        bootstrap,
        [("BROKER", b, dict(rate)) for b in brokers] + [("TOPIC", topic, throttled)],
    )
    admin = _kafka_python_admin(bootstrap)
    from kafka import TopicPartition

    partition = TopicPartition(topic, 0)
    try:
        admin.alter_partition_reassignments({partition: [2]})
        yield info, topic
    finally:
        admin.alter_partition_reassignments({partition: None})  # cancel: back to [1]
        deadline = time.monotonic() + 30
        while admin.list_partition_reassignments() and time.monotonic() < deadline:
            time.sleep(0.2)
        _alter_configs(
            bootstrap,
            [("BROKER", b, dict.fromkeys(rate)) for b in brokers]
            + [("TOPIC", topic, dict.fromkeys(throttled))],
        )
        admin.delete_topics([topic])
        admin.close()


def _moving(snapshot: ClusterSnapshot, topic: str) -> tuple[object, ...]:
    p = snapshot.topic(topic).partitions[0]
    return p.replicas, p.adding_replicas, p.removing_replicas, p.reassigning


def test_in_flight_reassignment_seen_by_both_sources(moving_topic: tuple[SandboxInfo, str]) -> None:
    info, topic = moving_topic
    # KIP-455: during the move replicas = target ++ origin-only, adding = new, removing = old.
    expected = ((2, 1), (2,), (1,), True)
    with AdminSource(info.bootstrap_servers) as admin_source:
        deadline = time.monotonic() + 15  # brokers learn the new replica set asynchronously
        from_admin = admin_source.snapshot([topic])
        while _moving(from_admin, topic) != expected and time.monotonic() < deadline:
            time.sleep(0.2)
            from_admin = admin_source.snapshot([topic])
    assert _moving(from_admin, topic) == expected
    size = from_admin.topic(topic).partitions[0].size_bytes
    assert size is not None and size >= PAYLOAD_BYTES
    if info.zookeeper is not None:
        with ZooKeeperSource(info.zookeeper) as zk_source:
            from_zk = zk_source.snapshot([topic])
        assert _moving(from_zk, topic) == expected
        p = from_zk.topic(topic).partitions[0]
        assert p.leader == 1 and p.isr == (1,)  # broker 2 cannot catch up at 1 B/s
