"""Apply on a cluster that misbehaves mid-move (fake clusters, injected clock).

Found on the ZooKeeper-mode sandbox: a receiving broker killed mid-move stays in the metadata
until its session expires, DescribeLogDirs to it fails (ECONNREFUSED), and the apply used to
end with exit 3 although the move was fine and completed once the broker was back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import ReassignmentInProgress, SourceError
from kreplica.executor import apply_base
from kreplica.executor.apply import Applier
from kreplica.executor.journal import Journal
from kreplica.executor.options import ApplyOptions
from kreplica.executor.planfile import PlanFile
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic
from tests.unit.executor.fakes import FakeCluster

KEY = ("t", 0)


class FlakyCluster(FakeCluster):
    """One partition moving from [1] to [1, 2]; reads fail `failures` times after the submit,
    then the move is complete."""

    def __init__(self, failures: int) -> None:
        super().__init__({KEY: (1,)})
        self.failures = failures
        self.targets: dict[tuple[str, int], Sequence[int]] = {}
        self.reads = 0

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        if self.targets:
            self.reads += 1
            if self.reads <= self.failures:
                raise SourceError("Kafka at x failed to describe log dirs: ECONNREFUSED")
        replicas = tuple(self.targets.get(KEY, (1,)))
        part = Partition("t", 0, replicas, leader=1, isr=replicas, size_bytes=10)
        return ClusterSnapshot(
            brokers=(Broker(1), Broker(2)), topics=(Topic("t", (part,)),), cluster_id="c"
        )

    def in_flight(self) -> Mapping[Any, Any]:
        return {}

    def alter_reassignments(self, targets: Mapping[Any, Sequence[int] | None]) -> None:
        pass


class Submit:
    name = "fake"

    def __init__(self, cluster: FlakyCluster) -> None:
        self.cluster = cluster

    def submit(self, targets: Mapping[tuple[str, int], Sequence[int]]) -> None:
        self.cluster.targets.update(targets)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds

    def wall(self) -> float:
        return 1e9 + self.t


def _applier(tmp_path: Path, cluster: FlakyCluster, events: list[dict[str, Any]]) -> Applier:
    plan = PlanFile(tmp_path / "p.json", {KEY: (1, 2)}, {KEY: (1,)}, {}, {"cluster_id": "c"})
    return Applier(
        cluster,
        Submit(cluster),
        plan,
        Journal(tmp_path / "p.journal.jsonl"),
        ApplyOptions(poll_interval_s=1.0),
        events.append,
        clock=Clock(),  # type: ignore[arg-type]
    )


def test_failed_reads_during_the_wait_are_retried(tmp_path: Path) -> None:
    cluster = FlakyCluster(failures=5)
    events: list[dict[str, Any]] = []
    result = _applier(tmp_path, cluster, events).run()
    assert result.moved == [KEY]
    warnings = [e for e in events if e["event"] == "warning"]
    assert len(warnings) == 1 and "ECONNREFUSED" in warnings[0]["message"]
    assert [e["event"] for e in events][-1] == "finish"


def test_reads_failing_for_too_long_end_the_apply(tmp_path: Path) -> None:
    cluster = FlakyCluster(failures=10_000)
    with pytest.raises(SourceError, match="ECONNREFUSED"):
        _applier(tmp_path, cluster, []).run()
    assert cluster.reads > apply_base.READ_RETRY_S  # retried (1 s polls) before giving up


# A submission the cluster refuses (found with --via zookeeper while /admin/reassign_partitions
# held another move: exit 6, and the throttles this apply had set stayed on the cluster).


class Refuses:
    name = "zookeeper"

    def submit(self, targets: Mapping[tuple[str, int], Sequence[int]]) -> None:
        raise ReassignmentInProgress("/admin/reassign_partitions exists: a move is in flight")


def test_a_refused_submission_restores_the_throttles(tmp_path: Path) -> None:
    cluster = FlakyCluster(failures=0)
    cluster.configs_set[("broker", "1")] = {"leader.replication.throttled.rate": "7"}  # someone's
    plan = PlanFile(tmp_path / "p.json", {KEY: (1, 2)}, {KEY: (1,)}, {}, {"cluster_id": "c"})
    journal = Journal(tmp_path / "p.journal.jsonl")
    applier = Applier(cluster, Refuses(), plan, journal, ApplyOptions(throttle=1000), clock=Clock())  # type: ignore[arg-type]
    with pytest.raises(ReassignmentInProgress):
        applier.run()
    assert {k: v for k, v in cluster.configs_set.items() if v} == {
        ("broker", "1"): {"leader.replication.throttled.rate": "7"}
    }
    kinds = [e["event"] for e in journal.read()]
    assert "throttle-set" in kinds and kinds[-2:] == ["error", "throttle-restored"]
