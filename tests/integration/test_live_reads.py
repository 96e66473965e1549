"""Live reads that ask only for what a command needs (issue 23): DescribeLogDirs only when
sizes are wanted, sent to every broker at once; no fenced-broker DescribeCluster in ZooKeeper
mode; ZooKeeper's bulk reads through one pipelined stream (kreplica.sources.zkwire) that must
read exactly what kazoo reads. Against the shared clusters, one topic of this module's own."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import kreplica.sources.zookeeper as zookeeper_source
from kreplica.errors import SourceError
from kreplica.model import ClusterSnapshot
from kreplica.sandbox import SandboxInfo
from kreplica.sources import open_source
from kreplica.sources.admin import AdminSource
from kreplica.testing import TopicSpec, create_topics
from tests.support.groups import per_mode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
TOPIC = "live-reads"


@pytest.fixture(scope="module")
def zk(zk_cluster: SandboxInfo) -> SandboxInfo:
    create_topics(
        zk_cluster.bootstrap_servers, [TopicSpec(TOPIC, partitions=6, replication_factor=2)]
    )
    return zk_cluster


def _same(a: ClusterSnapshot, b: ClusterSnapshot) -> bool:
    return dataclasses.replace(a, captured_at=None) == dataclasses.replace(b, captured_at=None)


class _Spy:
    """Counts calls of a method, then calls it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
        self.calls = 0
        inner = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return inner(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)


def test_without_sizes_no_describe_log_dirs_is_sent_and_the_rest_is_the_same(
    zk: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    spy = _Spy(monkeypatch, AdminSource, "_log_dirs")
    with open_source(bootstrap_server=zk.bootstrap_servers, read_sizes=False) as source:
        bare = source.snapshot([TOPIC, "orders"])
    assert spy.calls == 0
    with open_source(bootstrap_server=zk.bootstrap_servers) as source:
        full = source.snapshot([TOPIC, "orders"])
    assert spy.calls == 1
    parts = [p for t in full.topics for p in t.partitions]
    assert all(p.replica_dirs is not None and p.size_bytes is not None for p in parts)
    assert all(b.disks for b in full.brokers if b.alive)
    assert all(
        p.size_bytes is None and p.replica_dirs is None for t in bare.topics for p in t.partitions
    )
    assert all(b.disks is None and b.log_dirs is None for b in bare.brokers)
    # the sizes aside, the same cluster
    stripped = dataclasses.replace(
        full,
        brokers=tuple(dataclasses.replace(b, log_dirs=None, disks=None) for b in full.brokers),
        topics=tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(p, size_bytes=None, replica_dirs=None, replica_sizes=None)
                    for p in t.partitions
                ),
            )
            for t in full.topics
        ),
    )
    assert _same(stripped, bare)


@pytest.mark.parametrize("mode", per_mode("cluster"))
def test_zookeeper_mode_is_told_without_asking_for_fenced_brokers(
    mode: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one cluster per test: a test that used both would tie the two clusters' tests to one
    # xdist worker (tests/support/groups.py)
    cluster: SandboxInfo = request.getfixturevalue(f"{mode}_cluster")
    spy = _Spy(monkeypatch, AdminSource, "_fenced_brokers")
    with AdminSource(cluster.bootstrap_servers) as source:
        assert source.zookeeper_mode() is (mode == "zk")
        snap = source.snapshot(["orders"])
    assert snap.cluster_id == cluster.cluster_id
    # fenced brokers are a KRaft notion: asked once there, never of a ZooKeeper-mode cluster
    assert spy.calls == (0 if mode == "zk" else 1)


def test_zookeeper_bulk_reads_read_what_kazoo_reads(
    zk: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kreplica.sources.zkwire as zkwire

    assert zk.zookeeper is not None
    monkeypatch.setattr(zookeeper_source, "_WIRE_FROM", 1)  # every batch through zkwire
    spy = _Spy(monkeypatch, zkwire, "read_znodes")
    with zookeeper_source.ZooKeeperSource(zk.zookeeper) as source:
        wire = source.snapshot()
        assert spy.calls == 2  # the topic, broker and config znodes; the partition states
        source._plain = False  # as with a login: kazoo alone
        kazoo = source.snapshot()
    assert spy.calls == 2
    assert _same(wire, kazoo)
    topic = wire.topic(TOPIC)
    assert len(topic.partitions) == 6
    assert all(p.leader in p.replicas and p.isr for p in topic.partitions)


def test_zkwire_reports_a_missing_znode_as_none_and_a_dead_server_as_wire_error(
    zk: SandboxInfo,
) -> None:
    from kreplica.sources.zkwire import WireError, read_znodes

    assert zk.zookeeper is not None
    got = read_znodes(zk.zookeeper, ["/brokers/topics/no-such-topic", "/cluster/id"], timeout_s=10)
    assert got["/brokers/topics/no-such-topic"] is None
    assert json.loads(got["/cluster/id"] or b"")["id"] == zk.cluster_id
    with pytest.raises(WireError):
        read_znodes("127.0.0.1:1", ["/cluster/id"], timeout_s=2)


def _expand(*args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kreplica",
            "expand",
            "-t",
            TOPIC,
            "--rf",
            "3",
            "--dry-run",
            "--output",
            "json",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "120"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc["data"]


def test_no_sizes_plans_the_same_and_says_bytes_were_not_read(zk: SandboxInfo) -> None:
    with_sizes = _expand("--bootstrap-server", zk.bootstrap_servers)
    without = _expand("--bootstrap-server", zk.bootstrap_servers, "--no-sizes")
    assert with_sizes["report"]["bytes_to_move"] is not None
    assert without["report"]["bytes_to_move"] is None
    assert without["report"]["sizes_read"] is False
    assert "--no-sizes" in without["report"]["disk"]["unchecked"]
    assert with_sizes["reassignment"] == without["reassignment"]


def test_zookeeper_bulk_reads_on_a_degraded_cluster(
    zk_degraded: SandboxInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Broker 6 killed: the pipelined reads see what kazoo sees (its registration gone, so it
    is dead, out of every ISR, still named in the assignments and the real leaders)."""
    from tests.integration.conftest import DEAD_BROKER

    assert zk_degraded.zookeeper is not None
    monkeypatch.setattr(zookeeper_source, "_WIRE_FROM", 1)
    with zookeeper_source.ZooKeeperSource(zk_degraded.zookeeper) as source:
        wire = source.snapshot()
        source._plain = False
        kazoo = source.snapshot()
    assert _same(wire, kazoo)
    assert DEAD_BROKER not in wire.live_broker_ids()
    hand = wire.topic("hand")
    assert hand.partitions[0].replicas[0] == DEAD_BROKER
    assert all(DEAD_BROKER not in (p.isr or ()) for p in hand.partitions)
    assert hand.partitions[0].leader != DEAD_BROKER


@pytest.mark.parametrize("mode", per_mode("cluster"))
def test_plain_listeners_are_read_without_kafka_python_and_read_the_same(
    mode: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ApiVersions, DescribeLogDirs, ListPartitionReassignments and (KRaft) DescribeCluster
    v2 on kreplica's own connections (kreplica.sources.kafkawire) give the snapshot kafka-python
    gives, and kafka-python is not even started."""
    cluster: SandboxInfo = request.getfixturevalue(f"{mode}_cluster")
    topic = f"wire-{mode}"
    create_topics(cluster.bootstrap_servers, [TopicSpec(topic, partitions=6, replication_factor=2)])
    # a topic just created is not known to every broker at once, nor its logs created at once
    # (nor those of the partitions other tests add meanwhile): the two reads are compared
    # until the cluster holds still between them
    deadline = time.monotonic() + 60
    spy = _Spy(monkeypatch, AdminSource, "_kafka_python_client")
    while True:
        try:
            calls = spy.calls
            with AdminSource(cluster.bootstrap_servers) as source:
                assert source._wire
                wire = source.snapshot()
            read_by_kafka_python = spy.calls - calls
            with AdminSource(cluster.bootstrap_servers) as source:
                source._wire = False
                kafka_python = source.snapshot()
        except SourceError:
            assert time.monotonic() < deadline
            time.sleep(0.5)
            continue
        if _same(_steady(wire), _steady(kafka_python)) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert read_by_kafka_python == 0
    a, b = _steady(wire), _steady(kafka_python)
    assert a.brokers == b.brokers
    shape = [(t.name, len(t.partitions)) for t in a.topics]
    assert shape == [(t.name, len(t.partitions)) for t in b.topics]
    differ = [
        (p, q)
        for t, u in zip(a.topics, b.topics, strict=True)
        for p, q in zip(t.partitions, u.partitions, strict=True)
        if p != q
    ]
    assert not differ, differ[:3]
    assert _same(a, b)
    parts = [p for t in wire.topics if t.name == topic for p in t.partitions]
    assert len(parts) == 6 and all(p.replica_dirs and p.size_bytes is not None for p in parts)
    assert all(b.disks and b.disks[0].total_bytes for b in wire.brokers if b.alive)


def _steady(snap: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot without what moves between two reads of an idle cluster: free space."""
    brokers = tuple(
        dataclasses.replace(
            b, disks=tuple(dataclasses.replace(d, usable_bytes=0) for d in b.disks or ())
        )
        for b in snap.brokers
    )
    return dataclasses.replace(snap, brokers=brokers)
