"""The sandbox clusters really are what the fixtures promise: brokers 1..3 on racks a, b, c,
the standard topics with the requested shapes, and Kafka answering on the advertised ports."""

from __future__ import annotations

import pytest

from kreplica.sandbox import SandboxInfo

pytestmark = pytest.mark.integration


def _describe(info: SandboxInfo):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": info.bootstrap_servers})
    return admin.describe_cluster(request_timeout=10).result(timeout=15), admin.list_topics(
        timeout=10
    )


def test_zk_cluster_brokers_and_racks(zk_cluster: SandboxInfo) -> None:
    described, _ = _describe(zk_cluster)
    assert {n.id: n.rack for n in described.nodes} == {1: "a", 2: "b", 3: "c"}
    assert described.cluster_id == zk_cluster.cluster_id
    assert zk_cluster.zookeeper is not None
    assert {n.port for n in described.nodes} == {b.port for b in zk_cluster.brokers}


def test_zk_cluster_standard_topics(zk_cluster: SandboxInfo) -> None:
    _, metadata = _describe(zk_cluster)
    shapes = {
        name: sorted(
            (p, len(part.replicas)) for p, part in metadata.topics[name].partitions.items()
        )
        for name in ("orders", "payments", "grown", "manual", "single")
    }
    assert shapes["orders"] == [(p, 2) for p in range(6)]
    assert shapes["payments"] == [(p, 3) for p in range(3)]
    assert shapes["grown"] == [(p, 2) for p in range(5)]
    assert shapes["single"] == [(p, 1) for p in range(4)]
    manual = {p: part.replicas for p, part in metadata.topics["manual"].partitions.items()}
    assert manual == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
