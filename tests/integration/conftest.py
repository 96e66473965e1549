"""Session fixtures: a real ZooKeeper-mode Kafka 3.9 cluster and a real KRaft Kafka 4.x cluster,
3 brokers each on racks a, b, c, with the same topics. Each starts at most once per session, on
first use, and is always torn down."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kreplica.sandbox import DEFAULT_KRAFT_VERSION, DEFAULT_ZK_VERSION, SandboxInfo
from kreplica.testing import TopicSpec, create_topics, running_cluster

RACKS = ("a", "b", "c")

# The topics every integration test may rely on (identical in both clusters).
STANDARD_TOPICS = (
    TopicSpec("orders", partitions=6, replication_factor=2),
    TopicSpec("payments", partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"}),
    TopicSpec("grown", partitions=2, replication_factor=2, grow_to=5),
    TopicSpec("manual", assignment={0: [1, 2], 1: [2, 3], 2: [3, 1]}),
    TopicSpec("single", partitions=4, replication_factor=1),
)


def _cluster(mode: str, version: str) -> Iterator[SandboxInfo]:
    with running_cluster(
        backend="sandbox", mode=mode, brokers=3, racks=RACKS, kafka_version=version
    ) as info:
        create_topics(info.bootstrap_servers, STANDARD_TOPICS)
        yield info


@pytest.fixture(scope="session")
def zk_cluster() -> Iterator[SandboxInfo]:
    """Kafka 3.9.x in ZooKeeper mode: `.zookeeper` and `.bootstrap_servers` are both set."""
    yield from _cluster("zk", DEFAULT_ZK_VERSION)


@pytest.fixture(scope="session")
def kraft_cluster() -> Iterator[SandboxInfo]:
    """Kafka 4.x in KRaft mode (combined broker+controller nodes); `.zookeeper` is None."""
    yield from _cluster("kraft", DEFAULT_KRAFT_VERSION)
