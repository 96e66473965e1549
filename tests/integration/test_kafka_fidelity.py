"""kreplica.kafka against what a real ZooKeeper-mode Kafka 3.9 cluster actually placed.

The session cluster (3 brokers on racks a, b, c) created its standard topics through the Admin
API: CreateTopics ran AdminUtils with a random start and shift, and "grown" went from 2 to 5
partitions through CreatePartitions (ZK add-partitions). Read straight from ZooKeeper's znodes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kreplica.kafka import add_partitions, infer_layout
from kreplica.sandbox import SandboxInfo
from tests.integration.conftest import STANDARD_TOPICS

# The session's standard topics that Kafka's own placer laid out ("manual" has an explicit
# assignment; other tests add topics to the shared cluster and some change them with plans).
KAFKA_PLACED = {t.name for t in STANDARD_TOPICS if t.assignment is None}

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def zk_state(zk_cluster: SandboxInfo) -> Iterator[dict[str, Any]]:
    from kazoo.client import KazooClient

    assert zk_cluster.zookeeper is not None
    zk = KazooClient(hosts=zk_cluster.zookeeper, timeout=10)
    zk.start(timeout=30)
    try:
        racks = {}
        for broker_id in zk.get_children("/brokers/ids"):
            data, _ = zk.get(f"/brokers/ids/{broker_id}")
            racks[int(broker_id)] = json.loads(data).get("rack")
        topics = {}
        for topic in zk.get_children("/brokers/topics"):
            if topic.startswith("__"):
                continue
            data, _ = zk.get(f"/brokers/topics/{topic}")
            partitions = json.loads(data)["partitions"]
            topics[topic] = {int(p): replicas for p, replicas in partitions.items()}
        yield {"racks": racks, "topics": topics}
    finally:
        zk.stop()
        zk.close()


def test_zk_add_partitions_predicts_what_kafka_placed(zk_state: dict[str, Any]) -> None:
    grown = zk_state["topics"]["grown"]
    assert sorted(grown) == [0, 1, 2, 3, 4]
    racks = zk_state["racks"]
    assert set(racks.values()) == {"a", "b", "c"}
    predicted = add_partitions(list(racks), {0: grown[0], 1: grown[1]}, 5, racks=racks)
    assert predicted == {p: grown[p] for p in (2, 3, 4)}


def test_infer_layout_explains_every_topic_kafka_placed(zk_state: dict[str, Any]) -> None:
    racks = zk_state["racks"]
    explained = 0
    for name, assignment in zk_state["topics"].items():
        if name not in KAFKA_PLACED:
            continue
        layout = infer_layout(assignment, brokers=list(racks), racks=racks)
        assert layout is not None, name
        assert layout.nonconforming == (), (name, assignment, layout)
        assert layout.rack_aware, name  # every broker has a rack, so Kafka placed rack-aware
        rf = len(assignment[0])
        assert layout.extend(len(assignment), rf) == assignment, name
        explained += 1
    assert explained >= 4
