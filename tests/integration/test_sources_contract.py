"""One contract, every source: the same assertions against the snapshot file, the ZooKeeper
source and the AdminClient source (ZooKeeper-mode Kafka 3.9 and KRaft Kafka 4.x).

The expected shapes come from what the fixtures created (conftest STANDARD_TOPICS) and from
Kafka's placement guarantees, not from our own output; the ZooKeeper and AdminClient sources
read the same cluster through different paths (znodes vs. the Kafka protocol) and must agree.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from kreplica.errors import UnknownTopicError
from kreplica.model import ClusterSnapshot, Topic
from kreplica.sandbox import SandboxInfo
from kreplica.sources import AssignmentSource, open_source
from kreplica.sources.admin import AdminSource
from kreplica.sources.snapshot import write_snapshot
from kreplica.sources.zookeeper import ZooKeeperSource
from tests.support.groups import uses
from tests.support.polling import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

STANDARD = ["grown", "manual", "orders", "payments", "single"]
SOURCE_KINDS = ["snapshot-file", "zookeeper", "admin-zk", "admin-kraft"]


@pytest.fixture(scope="module")
def zk_snapshot_file(zk_cluster: SandboxInfo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A snapshot file written from the ZooKeeper-mode cluster (the offline fake, made real)."""
    assert zk_cluster.zookeeper is not None
    path = tmp_path_factory.mktemp("snapshots") / "zk-cluster.json"
    with ZooKeeperSource(zk_cluster.zookeeper) as source:
        write_snapshot(source.snapshot(), path)
    return path


@pytest.fixture(
    params=[
        pytest.param(k, marks=uses("kraft_cluster" if k == "admin-kraft" else "zk_cluster"))
        for k in SOURCE_KINDS
    ]
)
def opened(request: pytest.FixtureRequest) -> Iterator[tuple[AssignmentSource, SandboxInfo, str]]:
    """(source, the cluster it reads, the source name its snapshots carry)."""
    kind = request.param
    if kind == "admin-kraft":
        info: SandboxInfo = request.getfixturevalue("kraft_cluster")
        source = open_source(bootstrap_server=info.bootstrap_servers)
        expected_name = "admin"
    else:
        info = request.getfixturevalue("zk_cluster")
        if kind == "snapshot-file":
            source = open_source(snapshot=request.getfixturevalue("zk_snapshot_file"))
            expected_name = "zookeeper"
        elif kind == "zookeeper":
            source = open_source(zookeeper=info.zookeeper)
            expected_name = "zookeeper"
        else:
            source = open_source(bootstrap_server=info.bootstrap_servers)
            expected_name = "admin"
    try:
        yield source, info, expected_name
    finally:
        source.close()


def _rack_distinct(snapshot: ClusterSnapshot, topic: Topic) -> bool:
    racks = snapshot.racks()
    return all(len({racks[b] for b in p.replicas}) == len(p.replicas) for p in topic.partitions)


def test_brokers_racks_and_identity(opened: tuple[AssignmentSource, SandboxInfo, str]) -> None:
    source, info, name = opened
    snap = source.snapshot(STANDARD)
    assert snap.cluster_id == info.cluster_id
    assert snap.source == name
    assert snap.captured_at is not None
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", snap.captured_at)
    assert [(b.id, b.rack, b.alive) for b in snap.brokers] == [
        (sb.id, sb.rack, True) for sb in info.brokers
    ]
    expected = [("127.0.0.1", sb.port) for sb in info.brokers]
    assert [(b.host, b.port) for b in snap.brokers] == expected


def test_topic_shapes_as_created(opened: tuple[AssignmentSource, SandboxInfo, str]) -> None:
    source, _, _ = opened
    snap = source.snapshot(STANDARD)
    assert [t.name for t in snap.topics] == STANDARD
    shapes = {t.name: (len(t.partitions), t.replication_factor) for t in snap.topics}
    assert shapes == {
        "orders": (6, 2),
        "payments": (3, 3),
        "grown": (5, 2),
        "manual": (3, 2),
        "single": (4, 1),
    }
    for topic in snap.topics:
        assert [p.partition for p in topic.partitions] == list(range(len(topic.partitions)))
        assert {len(p.replicas) for p in topic.partitions} == {topic.replication_factor}
    assert snap.topic("manual").assignment() == {0: (1, 2), 1: (2, 3), 2: (3, 1)}


def test_configs_are_topic_overrides(opened: tuple[AssignmentSource, SandboxInfo, str]) -> None:
    source, _, _ = opened
    snap = source.snapshot(STANDARD)
    assert snap.topic("payments").configs == {"min.insync.replicas": "2"}
    assert snap.topic("payments").min_insync_replicas == 2
    assert snap.topic("payments").min_insync_replicas_source == "topic"
    for name in ("orders", "grown", "manual", "single"):
        # no override: configs stay empty; the effective value is Kafka's default (3.9 ZK,
        # and KRaft 4.x's own cluster-level default under ELR), or assumed in ZooKeeper
        assert snap.topic(name).configs == {}
        assert snap.topic(name).min_insync_replicas == 1


def test_kafka_placed_replicas_rack_aware_and_balanced(
    opened: tuple[AssignmentSource, SandboxInfo, str],
) -> None:
    # Kafka's placers (ZK AdminUtils and KRaft StripedReplicaPlacer) put the replicas of a
    # partition on distinct racks when racks >= RF. ZK AdminUtils also spreads them exactly
    # evenly (round robin); the KRaft placer is randomised, so only ZK mode is checked for that.
    source, info, _ = opened
    snap = source.snapshot(STANDARD)
    for name in ("orders", "payments", "grown", "single"):
        assert _rack_distinct(snap, snap.topic(name)), name
    if info.mode == "zk":
        orders = Counter(b for p in snap.topic("orders").partitions for b in p.replicas)
        assert orders == {1: 4, 2: 4, 3: 4}
    for partition in snap.topic("payments").partitions:
        assert sorted(partition.replicas) == [1, 2, 3]


def test_leaders_and_isr_on_a_healthy_cluster(
    opened: tuple[AssignmentSource, SandboxInfo, str],
) -> None:
    source, _, _ = opened
    snap = source.snapshot(STANDARD)
    for topic in snap.topics:
        for p in topic.partitions:
            assert p.leader in p.replicas, (topic.name, p.partition)
            assert p.isr is not None and p.isr == tuple(sorted(p.isr))
            assert set(p.isr) <= set(p.replicas) and p.leader in p.isr
            assert not p.reassigning
    # Freshly created: every replica caught up and the preferred replica leads.
    assert all(p.leader == p.replicas[0] for p in snap.topic("manual").partitions)


def test_all_topics_and_selection(opened: tuple[AssignmentSource, SandboxInfo, str]) -> None:
    source, _, _ = opened
    everything = source.snapshot()
    names = [t.name for t in everything.topics]
    assert names == sorted(names) and set(STANDARD) <= set(names)
    selected = source.snapshot(["single", "orders"])
    assert [t.name for t in selected.topics] == ["orders", "single"]
    assert selected.topic("orders") == everything.topic("orders")


def test_unknown_topic(opened: tuple[AssignmentSource, SandboxInfo, str]) -> None:
    source, _, _ = opened
    with pytest.raises(UnknownTopicError) as err:
        source.snapshot(["orders", "no-such-topic"])
    assert "'no-such-topic'" in str(err.value)
    assert "\n" not in str(err.value)


def test_repeatable(opened: tuple[AssignmentSource, SandboxInfo, str]) -> None:
    source, _, _ = opened
    first, second = source.snapshot(STANDARD), source.snapshot(STANDARD)
    assert _without_free_space(first) == _without_free_space(second)
    assert first.fingerprint() == second.fingerprint()


def _without_free_space(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """A snapshot without its one live measurement: a log dir's usable bytes move between two
    reads whenever anything else writes to the same disk (paths and totals must not)."""
    brokers = tuple(
        replace(b, disks=tuple(replace(d, usable_bytes=None) for d in b.disks)) if b.disks else b
        for b in snapshot.brokers
    )
    return replace(snapshot, brokers=brokers, captured_at=None)


def _without_sizes(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """What both sources can know: no sizes, log dirs or disk figures (DescribeLogDirs), and no
    origin of a min.insync.replicas that is not a topic override (ZooKeeper cannot see
    server.properties, so it says Kafka's default is assumed where the AdminClient reads it)."""
    topics = tuple(
        replace(
            t,
            partitions=tuple(
                replace(p, size_bytes=None, replica_dirs=None, replica_sizes=None)
                for p in t.partitions
            ),
            min_isr_source=None,
        )
        for t in snapshot.topics
    )
    brokers = tuple(replace(b, log_dirs=None, disks=None) for b in snapshot.brokers)
    return replace(snapshot, brokers=brokers, topics=topics, source=None, captured_at=None)


def test_zookeeper_and_admin_agree_on_the_same_cluster(zk_cluster: SandboxInfo) -> None:
    assert zk_cluster.zookeeper is not None
    with (
        ZooKeeperSource(zk_cluster.zookeeper) as zk_source,
        AdminSource(zk_cluster.bootstrap_servers) as admin_source,
    ):
        # Other tests share this cluster and may leave a change settling (a topic being
        # deleted, a leader moving); the two reads are not atomic, so read until they agree.
        from_zk, from_admin = eventually(
            lambda: (zk_source.snapshot(), admin_source.snapshot()),
            lambda both: _without_sizes(both[0]) == _without_sizes(both[1]),
            timeout_s=10,
            interval_s=0.5,
        )
    assert _without_sizes(from_zk).brokers == _without_sizes(from_admin).brokers
    assert [t.name for t in from_zk.topics] == [t.name for t in from_admin.topics]
    for zk_topic, admin_topic in zip(from_zk.topics, from_admin.topics, strict=True):
        assert zk_topic.configs == admin_topic.configs, zk_topic.name
        assert zk_topic.min_insync_replicas == admin_topic.min_insync_replicas, zk_topic.name
        if "min.insync.replicas" in zk_topic.configs:
            assert zk_topic.min_isr_source == admin_topic.min_isr_source == "topic"
        else:  # this cluster sets no broker default: only the AdminClient can tell
            assert admin_topic.min_isr_source == "kafka default", admin_topic.name
            assert zk_topic.min_insync_replicas_assumed, zk_topic.name
    assert _without_sizes(from_zk) == _without_sizes(from_admin)
    # Only the AdminClient knows sizes (DescribeLogDirs); ZooKeeper never does.
    assert all(p.size_bytes is None for t in from_zk.topics for p in t.partitions)
    assert all(
        p.size_bytes is not None and p.size_bytes >= 0
        for t in from_admin.topics
        for p in t.partitions
    )


@pytest.mark.parametrize("kind", ["zookeeper", "admin"])
def test_snapshot_file_round_trips_live_snapshots(
    zk_cluster: SandboxInfo, tmp_path: Path, kind: str
) -> None:
    assert zk_cluster.zookeeper is not None
    source: AssignmentSource = (
        ZooKeeperSource(zk_cluster.zookeeper)
        if kind == "zookeeper"
        else AdminSource(zk_cluster.bootstrap_servers)
    )
    try:
        live = source.snapshot()
    finally:
        source.close()
    path = tmp_path / "snapshot.json"
    write_snapshot(live, path)
    assert open_source(snapshot=path).snapshot() == live  # everything, sizes and times too
