"""`explain` on topics a real KRaft Kafka 4.x controller placed (StripedReplicaPlacer).

The session KRaft cluster (3 brokers on racks a, b, c) created its standard topics through the
Admin API, so the controller's striped placer chose every replica of orders, payments and
single. The shared 6-broker KRaft cluster (`kraft_degraded`: two brokers per rack, as in the
sandbox the explain bugs were reported on; its STRIPED_TOPICS were created while all 6 were up)
makes the rack's brokers take turns, which 3 brokers cannot show.
"""

from __future__ import annotations

import pytest

from kreplica.model import ClusterSnapshot
from kreplica.planner import explain_topic
from kreplica.planner.striped import match_striped
from kreplica.sandbox import SandboxInfo
from kreplica.sources.admin import AdminSource
from kreplica.testing import TopicSpec
from tests.integration.conftest import STRIPED_TOPICS

pytestmark = pytest.mark.integration

KAFKA_PLACED = ("orders", "payments", "single")  # created with a partition count and an RF

SIX_BROKER_TOPICS = STRIPED_TOPICS


def _read(info: SandboxInfo) -> ClusterSnapshot:
    with AdminSource(info.bootstrap_servers) as source:
        return source.snapshot()


@pytest.fixture(scope="module")
def kraft_snapshot(kraft_cluster: SandboxInfo) -> ClusterSnapshot:
    return _read(kraft_cluster)


@pytest.fixture(scope="module")
def six_broker_snapshot(kraft_degraded: SandboxInfo) -> ClusterSnapshot:
    return _read(kraft_degraded)


@pytest.mark.parametrize("name", KAFKA_PLACED)
def test_explain_recognises_topics_kraft_placed(kraft_snapshot: ClusterSnapshot, name: str) -> None:
    topic = kraft_snapshot.topic(name)
    match = match_striped(topic.assignment(), kraft_snapshot.broker_ids(), kraft_snapshot.racks())
    assert match is not None and match.nonconforming == (), (name, topic.assignment())
    doc = explain_topic(kraft_snapshot, name)
    layout = doc["layout"]
    assert layout["kafka_default"] is True, (name, topic.assignment(), layout)
    assert layout["placement_fits"]["kraft-striped"] == len(topic.partitions)
    assert layout["nonconforming_partitions"] == [] and layout["added_partitions"] == []
    assert doc["mixed_rf"] is False
    assert "not Kafka's default placement" not in doc["summary"]
    assert "add-partitions" not in doc["summary"]


def test_a_hand_assigned_topic_is_read_as_it_is(kraft_snapshot: ClusterSnapshot) -> None:
    # "manual" was created with {0: [1, 2], 1: [2, 3], 2: [3, 1]}: on one broker per rack that
    # is exactly what the striped placer gives for some draw, so explain may call it Kafka's;
    # it must never invent add-partitions history for it.
    doc = explain_topic(kraft_snapshot, "manual")
    assert doc["layout"]["added_partitions"] == []
    assert doc["partitions"] == 3 and doc["replication_factors"] == {2: 3}


@pytest.mark.parametrize("spec", SIX_BROKER_TOPICS, ids=lambda s: s.name)
def test_explain_recognises_striped_topics_on_six_brokers(
    six_broker_snapshot: ClusterSnapshot, spec: TopicSpec
) -> None:
    snapshot = six_broker_snapshot
    assert {b.rack for b in snapshot.brokers} == {"a", "b", "c"} and len(snapshot.brokers) == 6
    topic = snapshot.topic(spec.name)
    assert len(topic.partitions) == spec.partitions
    doc = explain_topic(snapshot, spec.name)
    layout = doc["layout"]
    assert layout["kafka_default"] is True, (spec.name, topic.assignment(), layout)
    assert layout["placement_fits"]["kraft-striped"] == spec.partitions
    assert layout["added_partitions"] == []
    if layout["placement"] == "kraft-striped":
        assert layout["striped_cycle"] == 6
        assert "KRaft's striped placement" in doc["summary"]


def test_six_broker_topics_are_not_all_zookeeper_coincidences(
    six_broker_snapshot: ClusterSnapshot,
) -> None:
    # With RF >= 2 on two brokers per rack, ZooKeeper-mode placement explains a striped topic
    # only by chance: at least one of them must be named as KRaft's.
    placements = {
        spec.name: explain_topic(six_broker_snapshot, spec.name)["layout"]["placement"]
        for spec in SIX_BROKER_TOPICS
        if (spec.replication_factor or 1) >= 2
    }
    assert "kraft-striped" in placements.values(), placements
