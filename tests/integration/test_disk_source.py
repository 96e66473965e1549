"""Disk data read from real clusters (Kafka 3.9 ZooKeeper mode, Kafka 4.x KRaft; the shared
session clusters, 2 log dirs per broker): through --bootstrap-server every broker's log dirs
come with total and usable bytes (DescribeLogDirs v4), and every replica with its dir and its
own size; the snapshot file keeps them; --zookeeper alone has no disk data and the plan says
"disk: unchecked"; --zookeeper with --bootstrap-server reads the figures from the brokers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kreplica.sandbox import SandboxInfo
from tests.integration.test_cli_clusters import envelope, kreplica
from tests.support.groups import per_mode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(params=per_mode("cluster"))
def info(request: pytest.FixtureRequest) -> Iterator[SandboxInfo]:
    yield request.getfixturevalue(f"{request.param}_cluster")


def test_bootstrap_server_reads_dir_figures_and_each_replicas_dir_and_size(
    info: SandboxInfo,
) -> None:
    from kreplica.sources import open_source

    with open_source(bootstrap_server=info.bootstrap_servers, timeout_s=30) as source:
        snap = source.snapshot()
    dirs = {}
    for broker in snap.brokers:
        assert broker.disks, broker
        for d in broker.disks:
            assert d.total_bytes is not None and d.usable_bytes is not None, d
            assert 0 < d.usable_bytes <= d.total_bytes
        assert broker.log_dirs == tuple(d.path for d in broker.disks)
        dirs[broker.id] = set(broker.log_dirs)
    checked = 0
    for topic in snap.topics:
        for p in topic.partitions:
            assert p.replica_dirs is not None and p.replica_sizes is not None, p
            assert len(p.replica_dirs) == len(p.replica_sizes) == len(p.replicas)
            for b, path, size in zip(p.replicas, p.replica_dirs, p.replica_sizes, strict=True):
                assert path in dirs[b], (p, b, path)
                assert size is not None and size >= 0
                checked += 1
            assert p.size_bytes == max(s for s in p.replica_sizes if s is not None)
    assert checked >= 6 * 2 + 3 * 3  # orders and payments at least


def test_the_snapshot_file_keeps_the_disk_figures(info: SandboxInfo, tmp_path: Path) -> None:
    out = tmp_path / "snap.json"
    flags = ["--bootstrap-server", info.bootstrap_servers]
    proc = kreplica("snapshot", *flags, "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    for broker in data["brokers"]:
        assert len(broker["log_dirs"]) == 2
        for d in broker["log_dirs"]:
            assert set(d) == {"path", "total_bytes", "usable_bytes"}
    payments = next(t for t in data["topics"] if t["name"] == "payments")
    assert all(len(p["replica_dirs"]) == 3 for p in payments["partitions"])
    # planning from that file checks disks, as planning from the cluster does
    plan = kreplica("expand", "--snapshot", str(out), "-t", "orders", "--rf", "3", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "disk: checked" in plan.stdout


def test_zookeeper_alone_has_no_disk_data(zk_cluster: SandboxInfo) -> None:
    assert zk_cluster.zookeeper is not None
    zk = ["--zookeeper", zk_cluster.zookeeper]
    snap = envelope(kreplica("snapshot", *zk, "--output", "json"))["data"]["snapshot"]
    assert all("usable_bytes" not in json.dumps(b) for b in snap["brokers"])
    plan = kreplica("expand", *zk, "-t", "orders", "--rf", "3", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "disk: unchecked (read from ZooKeeper" in plan.stdout
    live = kreplica(
        "expand", "--bootstrap-server", zk_cluster.bootstrap_servers, "-t", "orders", "--rf", "3",
        "--dry-run",
    )  # fmt: skip
    assert live.returncode == 0, live.stderr
    assert "disk: checked" in live.stdout


def test_zookeeper_with_a_bootstrap_server_reads_both(zk_cluster: SandboxInfo) -> None:
    # the assignment from ZooKeeper, the disk figures and sizes from the brokers
    assert zk_cluster.zookeeper is not None
    both = ["--zookeeper", zk_cluster.zookeeper, "--bootstrap-server", zk_cluster.bootstrap_servers]
    snap = envelope(kreplica("snapshot", *both, "--output", "json"))["data"]["snapshot"]
    assert snap["source"] == "zookeeper"
    for broker in snap["brokers"]:
        assert len(broker["log_dirs"]) == 2, broker
        assert all(d["usable_bytes"] > 0 for d in broker["log_dirs"]), broker
    orders = next(t for t in snap["topics"] if t["name"] == "orders")
    for p in orders["partitions"]:
        assert len(p["replica_dirs"]) == len(p["replicas"]), p
        assert p["size_bytes"] == max(p["replica_sizes"]), p
    plan = kreplica("expand", *both, "-t", "orders", "--rf", "3", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "disk: checked" in plan.stdout and "unchecked" not in plan.stdout
