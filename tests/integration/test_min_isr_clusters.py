"""The effective min.insync.replicas on real clusters (Kafka 3.9 ZooKeeper mode, 4.x KRaft): a
cluster default of 2 set with Kafka's own `kafka-configs --entity-type brokers --entity-default`
stops `kreplica shrink --rf 2` of an RF 3 topic without overrides, through every source, and
the refusal names the value and where it comes from. On the scratch cluster of each
mode (the shared clusters keep Kafka's defaults: other tests rely on them)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from kreplica.errors import ExitCode
from kreplica.sandbox import SandboxInfo
from kreplica.sources import open_source
from kreplica.sources.znodes import MIN_ISR_ZK_UNKNOWN
from kreplica.testing import TopicSpec, create_topics
from tests.support.cli import run_kreplica
from tests.support.groups import per_mode

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
TOPICS = (
    TopicSpec("plain", partitions=3, replication_factor=3),
    TopicSpec("pinned", partitions=3, replication_factor=3, configs={"min.insync.replicas": "1"}),
)


kreplica = partial(run_kreplica, cwd=REPO, isolated=True)


@dataclass
class Cluster:
    info: SandboxInfo
    before: dict[str, tuple[int | None, str | None]]  # source -> plain's value before the default

    def sources(self) -> dict[str, list[str]]:
        out = {"admin": ["--bootstrap-server", self.info.bootstrap_servers]}
        if self.info.zookeeper:
            out["zookeeper"] = ["--zookeeper", self.info.zookeeper]
        return out


def _plain(kwargs: dict[str, str]) -> tuple[int | None, str | None]:
    with open_source(**kwargs, timeout_s=20) as source:
        topic = source.snapshot(["plain"]).topic("plain")
    return topic.effective_min_isr, topic.min_isr_source


@pytest.fixture(scope="module", params=per_mode("scratch"))
def cluster(request: pytest.FixtureRequest) -> Cluster:
    # The scratch cluster keeps the default set below (see zk_scratch in conftest.py).
    info: SandboxInfo = request.getfixturevalue(f"{request.param}_scratch")
    create_topics(info.bootstrap_servers, TOPICS)
    kinds = {"admin": {"bootstrap_server": info.bootstrap_servers}}
    if info.zookeeper:
        kinds["zookeeper"] = {"zookeeper": info.zookeeper}
    before = {name: _plain(kwargs) for name, kwargs in kinds.items()}
    proc = kreplica(
        "sandbox",
        "kafka",
        "--name",
        info.name,
        "kafka-configs",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--alter",
        "--add-config",
        "min.insync.replicas=2",
    )
    assert proc.returncode == 0, proc.stderr
    return Cluster(info, before)


def test_before_the_default_each_source_says_what_it_knows(cluster: Cluster) -> None:
    if cluster.info.zookeeper:
        # ZooKeeper mode 3.9: nothing set anywhere, DescribeConfigs says DEFAULT_CONFIG; the
        # ZooKeeper source cannot see server.properties, so it assumes Kafka's default.
        assert cluster.before == {
            "admin": (1, "kafka default"),
            "zookeeper": (1, MIN_ISR_ZK_UNKNOWN),
        }
    else:
        # KRaft 4.x with ELR (KIP-966): the controller itself writes a cluster-level
        # min.insync.replicas=1, reported as DYNAMIC_DEFAULT_BROKER_CONFIG.
        assert cluster.before == {"admin": (1, "cluster default")}


def test_shrink_to_the_cluster_default_is_refused_through_every_source(
    cluster: Cluster, tmp_path: Path
) -> None:
    for name, args in cluster.sources().items():
        proc = kreplica("shrink", *args, "--topic", "plain", "--rf", "2", "--dry-run")
        assert proc.returncode == ExitCode.INFEASIBLE, (name, proc.stdout, proc.stderr)
        assert proc.stderr.count("\n") == 1, (name, proc.stderr)
        assert (
            "RF 2 <= min.insync.replicas=2 (cluster default), so producers with acks=all fail"
            in proc.stderr
        ), (name, proc.stderr)
        assert proc.stderr.rstrip().endswith(
            "lower min.insync.replicas first, ask for RF 3 or more, or pass --force"
        ), (name, proc.stderr)
        # The topic's own override wins over the cluster default.
        proc = kreplica("shrink", *args, "--topic", "pinned", "--rf", "2", "--dry-run")
        assert proc.returncode == 0, (name, proc.stderr)
        # `kreplica snapshot` records the value and its source; the file refuses the same.
        snap = tmp_path / f"{name}.json"
        proc = kreplica("snapshot", *args, "-o", str(snap))
        assert proc.returncode == 0, (name, proc.stderr)
        topics = {t["name"]: t for t in json.loads(snap.read_text())["topics"]}
        assert topics["plain"]["configs"] == {}
        assert (
            topics["plain"]["min_insync_replicas"],
            topics["plain"]["min_insync_replicas_source"],
        ) == (2, "cluster default"), name
        assert topics["pinned"]["configs"] == {"min.insync.replicas": "1"}
        assert (
            topics["pinned"]["min_insync_replicas"],
            topics["pinned"]["min_insync_replicas_source"],
        ) == (1, "topic"), name
        proc = kreplica(
            "shrink", "--snapshot", str(snap), "--topic", "plain", "--rf", "2", "--dry-run"
        )
        assert proc.returncode == ExitCode.INFEASIBLE, (name, proc.stderr)
        assert "min.insync.replicas=2 (cluster default)" in proc.stderr
