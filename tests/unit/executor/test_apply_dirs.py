"""Intra-broker moves (log_dirs) in the apply loop, against a simulated JBOD cluster (the real
thing runs on the sandboxes in tests/integration/test_dirs_clusters.py): the dir throttle is set
for the run and restored, each replica lands in its dir, the journal records it, resume and
cancel work, and verify reports a replica that is not in its dir."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from kreplica.errors import StalePlan, VerificationFailed
from kreplica.executor.apply import Applier
from kreplica.executor.apply_base import _Clock
from kreplica.executor.cancel import cancel_marker, cancel_plan
from kreplica.executor.dirmoves import DirKey, ReplicaLog, copied, dir_targets, pending
from kreplica.executor.journal import Journal
from kreplica.executor.options import ApplyOptions
from kreplica.executor.planfile import PlanFile
from kreplica.executor.throttles import ALTER_DIRS_RATE
from kreplica.executor.verify import verify_plan
from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition, Topic
from tests.unit.executor.fakes import FakeCluster

Key = tuple[str, int]
DIRS = ("/d/a", "/d/b")
REPLICAS: dict[Key, tuple[int, ...]] = {("t", 0): (1, 2), ("t", 1): (2, 1), ("u", 0): (1,)}


class JbodCluster(FakeCluster):
    """Every replica starts in /d/a; a dir move shows a future log for `polls` reads."""

    def __init__(self, polls: int = 2) -> None:
        super().__init__(REPLICAS, polls)
        self.dirs: dict[DirKey, str] = {
            (t, p, b): "/d/a" for (t, p), reps in REPLICAS.items() for b in reps
        }
        self.future: dict[DirKey, list[Any]] = {}  # key -> [dir, reads left]
        self.sent: list[dict[DirKey, str]] = []
        self.throttle_seen: list[str | None] = []

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        by_topic: dict[str, list[Partition]] = {}
        for (topic, pid), reps in sorted(REPLICAS.items()):
            by_topic.setdefault(topic, []).append(
                Partition(topic, pid, reps, leader=reps[0], isr=reps, size_bytes=100)
            )
        disks = tuple(LogDir(d, 1000, 900) for d in DIRS)
        return ClusterSnapshot(
            brokers=tuple(Broker(b, disks=disks) for b in (1, 2)),
            topics=tuple(Topic(t, tuple(ps)) for t, ps in sorted(by_topic.items())),
            cluster_id="sim",
        )

    def replica_logs(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> dict[DirKey, ReplicaLog]:
        for key in list(self.future):
            self.future[key][1] -= 1
            if self.future[key][1] <= 0:
                self.dirs[key] = self.future.pop(key)[0]
        self.throttle_seen.append(self.configs_set.get(("broker", "1"), {}).get(ALTER_DIRS_RATE))
        return {
            k: ReplicaLog(path, 100, self.future[k][0] if k in self.future else None, 40)
            for k, path in self.dirs.items()
            if k[0] in topics and k[2] in brokers
        }

    def alter_replica_log_dirs(
        self, targets: Mapping[DirKey, str], *, missing_ok: bool = False
    ) -> None:
        self.sent.append(dict(targets))
        for key, path in targets.items():
            if path == self.dirs[key]:
                self.future.pop(key, None)  # back to its dir: the move stops
            else:
                self.future[key] = [path, self.polls]

    def live_broker_ids(self) -> set[int]:
        return {1, 2}

    def alter_reassignments(self, targets: Mapping[Key, Sequence[int] | None]) -> None:
        raise AssertionError("an intra-broker plan reassigns nothing")

    def create_partitions(self, topic: str, total: int, new: Sequence[Sequence[int]]) -> None:
        raise AssertionError("nothing to create")


class Submitter:
    name = "sim"

    def submit(self, targets: Mapping[Key, Sequence[int]]) -> None:
        raise AssertionError("an intra-broker plan submits no reassignment")


# broker 1 drains /d/a: its replicas of t-0, t-1 and u-0 go to /d/b
WANTED = {("t", 0): ("/d/b", "any"), ("t", 1): ("any", "/d/b"), ("u", 0): ("/d/b",)}


def _plan(tmp_path: Path, before_dirs: dict[DirKey, str] | None = None) -> PlanFile:
    targets = {k: REPLICAS[k] for k in WANTED}
    return PlanFile(
        tmp_path / "plan.json",
        targets,
        dict(targets),
        {},
        {"kreplica_plan": 1, "cluster_id": "sim"},
        dir_targets(targets, WANTED),
        before_dirs if before_dirs is not None else {},
    )


def _applier(tmp_path: Path, cluster: JbodCluster, plan: PlanFile, **options: Any) -> Applier:
    return Applier(
        cluster,
        Submitter(),
        plan,
        Journal(tmp_path / "plan.journal.jsonl"),
        ApplyOptions(poll_interval_s=0, **options),
        lambda event: None,
        _Clock(sleep=lambda s: None),
    )


def test_pure_helpers() -> None:
    targets = dir_targets({("t", 0): (1, 2)}, {("t", 0): ("any", "/d/b")})
    assert targets == {("t", 0, 2): "/d/b"}
    logs = {("t", 0, 2): ReplicaLog("/d/a", 100, "/d/b", 30)}
    assert pending(targets, logs) == [("t", 0, 2)]
    assert copied(targets, logs) == (30, 100)
    logs = {("t", 0, 2): ReplicaLog("/d/b", 100)}
    assert pending(targets, logs) == [] and copied(targets, logs) == (100, 100)


def test_dir_moves_land_with_the_dir_throttle_set_for_the_run(tmp_path: Path) -> None:
    cluster = JbodCluster()
    result = _applier(tmp_path, cluster, _plan(tmp_path), throttle=5000).run()
    assert sorted(result.dir_moved) == [("t", 0, 1), ("t", 1, 1), ("u", 0, 1)]
    assert all(cluster.dirs[k] == "/d/b" for k in result.dir_moved)
    assert cluster.dirs[("t", 0, 2)] == "/d/a"  # "any": untouched
    assert "5000" in cluster.throttle_seen  # set while the moves ran
    assert all(not values for values in cluster.configs_set.values())  # and cleared after
    kinds = [e["event"] for e in Journal(tmp_path / "plan.journal.jsonl").read()]
    assert kinds.count("dir-submit") == 3 and kinds.count("dir-complete") == 3
    assert (
        kinds.index("throttle-set") < kinds.index("dir-submit") < kinds.index("throttle-restored")
    )
    assert kinds[-1] == "finish"
    assert verify_plan(cluster, _plan(tmp_path)) == []
    assert _applier(tmp_path, cluster, _plan(tmp_path)).run().nothing_to_do


def test_verify_reports_replicas_not_in_their_dir(tmp_path: Path) -> None:
    cluster = JbodCluster()
    differences = verify_plan(cluster, _plan(tmp_path))
    assert sorted((d.partition, d.planned_dir, d.now_dir) for d in differences) == [
        ("t-0 on broker 1", "/d/b", "/d/a"),
        ("t-1 on broker 1", "/d/b", "/d/a"),
        ("u-0 on broker 1", "/d/b", "/d/a"),
    ]


def test_a_dir_the_broker_lacks_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    cluster = JbodCluster()
    plan = _plan(tmp_path)
    bad = PlanFile(
        plan.path, plan.targets, plan.before, {}, plan.document, {("t", 0, 1): "/d/zz"}, {}
    )
    with pytest.raises(VerificationFailed, match="no such dir"):
        _applier(tmp_path, cluster, bad).run()
    assert cluster.sent == [] and not (tmp_path / "plan.journal.jsonl").exists()


def test_drift_of_a_replica_dir_is_stale(tmp_path: Path) -> None:
    cluster = JbodCluster()
    cluster.dirs[("u", 0, 1)] = "/d/c"  # moved by someone else since the plan
    plan = _plan(tmp_path, dict.fromkeys(_plan(tmp_path).dirs, "/d/a"))
    with pytest.raises(StalePlan, match="u-0 on broker 1 was in /d/a and is now in /d/c"):
        _applier(tmp_path, cluster, plan).run()
    result = _applier(tmp_path, cluster, plan, on_drift="skip").run()
    assert ("u", 0, 1) not in result.dir_moved and len(result.skipped) == 1


def test_cancel_sends_running_moves_back_to_their_dir(tmp_path: Path) -> None:
    cluster = JbodCluster(polls=1000)
    plan = _plan(tmp_path)
    applier = _applier(tmp_path, cluster, plan, throttle=5000)
    reads = 0
    original = cluster.replica_logs

    def logs(topics: Sequence[str], brokers: Collection[int]) -> dict[DirKey, ReplicaLog]:
        nonlocal reads
        reads += 1
        if reads == 3:  # moves are running: someone runs kreplica cancel
            cancel_marker(applier.journal).write_text("cancel\n")
        return original(topics, brokers)

    cluster.replica_logs = logs  # type: ignore[method-assign]
    with pytest.raises(Exception, match="cancelled"):
        applier.run()
    assert cluster.future == {}  # every future log dropped
    assert all(cluster.dirs[k] == "/d/a" for k in plan.dirs)
    assert all(not values for values in cluster.configs_set.values())
    # cancel with no apply running: nothing in flight, nothing to send back
    assert cancel_plan(cluster, plan, Journal(tmp_path / "plan.journal.jsonl")) == ([], False)


def test_cancel_without_a_running_apply_stops_the_dir_moves(tmp_path: Path) -> None:
    cluster = JbodCluster(polls=1000)
    plan = _plan(tmp_path)
    cluster.alter_replica_log_dirs({("t", 0, 1): "/d/b", ("u", 0, 1): "/d/b"})  # running
    cancelled, running = cancel_plan(cluster, plan, Journal(tmp_path / "plan.journal.jsonl"))
    assert (cancelled, running) == ([("t", 0), ("u", 0)], False)
    assert cluster.future == {}
    assert cluster.sent[-1] == {("t", 0, 1): "/d/a", ("u", 0, 1): "/d/a"}
