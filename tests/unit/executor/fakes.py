"""The one in-memory cluster the executor's unit tests apply to (pure code: the real ones are
tested on the sandboxes in tests/integration), and a submitter for it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from kreplica.executor.authz import Need
from kreplica.executor.dirmoves import DirKey, ReplicaLog
from kreplica.executor.safestart import ControllerFacts
from kreplica.model import Broker, ClusterSnapshot, Partition, Topic, TrafficWindow

Key = tuple[str, int]
MEASURED_AT = "2026-11-28T00:00:00Z"


class FakeCluster:
    """The executor's unit tests' in-memory cluster: the whole port apply, resume and cancel
    use (kreplica.executor.apply_base.Cluster). Brokers 1-5 (`down` ones not alive); a
    reassignment finishes `polls` snapshots after it is submitted; configs kept as written;
    what `require` was asked kept in `required` (everything is allowed); write rates from
    `rates`, each measurement's partitions kept in `measured`."""

    last_path: str | None = None

    def __init__(self, assignment: dict[Key, tuple[int, ...]], polls: int = 2) -> None:
        self.assignment = dict(assignment)
        self.moving: dict[Key, list[Any]] = {}  # key -> [target, polls left, old]
        self.polls = polls
        self.configs_set: dict[tuple[str, str], dict[str, str]] = {}
        self.submitted: list[Key] = []
        self.created: list[tuple[str, int]] = []
        self.down: set[int] = set()
        self.required: list[Need] = []
        self.rates: dict[Key, float | None] = {}  # what write_rates measures (default 0 B/s)
        self.measured: list[list[Key]] = []  # the partitions each write_rates call measured

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot:
        for key in list(self.moving):
            state = self.moving[key]
            state[1] -= 1
            if state[1] <= 0:
                self.assignment[key] = tuple(state[0])
                del self.moving[key]
        by_topic: dict[str, list[Partition]] = {}
        for (topic, pid), reps in sorted(self.assignment.items()):
            shown = reps
            if (topic, pid) in self.moving:
                shown = tuple(dict.fromkeys([*self.moving[(topic, pid)][0], *reps]))
            by_topic.setdefault(topic, []).append(
                Partition(topic, pid, shown, leader=shown[0], isr=reps, size_bytes=10)
            )
        return ClusterSnapshot(
            brokers=tuple(Broker(b, alive=b not in self.down) for b in range(1, 6)),
            topics=tuple(Topic(t, tuple(ps)) for t, ps in sorted(by_topic.items())),
            cluster_id="sim",
        )

    def in_flight(self) -> Mapping[Key, Any]:
        return {k: object() for k in self.moving}

    def live_broker_ids(self) -> set[int]:
        return set(range(1, 6)) - self.down

    def controller_facts(self) -> ControllerFacts:
        return ControllerFacts()  # nothing known: the safe-start check says so in a note

    def require(self, needs: Sequence[Need]) -> None:
        self.required += needs

    def out_of_isr(self, exclude: Collection[Key] = ()) -> int:
        return 0

    def replica_logs(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> Mapping[DirKey, ReplicaLog]:
        return {}

    def alter_replica_log_dirs(
        self, targets: Mapping[DirKey, str], *, missing_ok: bool = False
    ) -> None:
        raise AssertionError("no log dir moves on this cluster")

    def replica_bytes(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> dict[tuple[str, int, int], int]:
        return {}

    def configs(self, kind: str, names: Sequence[str]) -> dict[str, dict[str, str]]:
        return {n: dict(self.configs_set.get((kind, n), {})) for n in names}

    def alter_configs(self, kind: str, name: str, values: Mapping[str, str | None]) -> None:
        self.last_path = "the Admin API"
        current = self.configs_set.setdefault((kind, name), {})
        for key, value in values.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value

    def alter_reassignments(self, targets: Mapping[Key, Sequence[int] | None]) -> None:
        for key, target in targets.items():
            if target is None:
                self.moving.pop(key, None)  # cancelled: back to the old replicas
            else:
                self.moving[key] = [tuple(target), self.polls, self.assignment[key]]

    def write_rates(
        self,
        keys: Collection[Key],
        window_s: float,
        progress: Callable[[float, float], None] | None = None,
    ) -> tuple[dict[Key, float | None], TrafficWindow]:
        self.measured.append(sorted(keys))
        if progress is not None:
            progress(0.0, window_s)
        return {k: self.rates.get(k, 0.0) for k in keys}, TrafficWindow(window_s, MEASURED_AT)

    def create_partitions(self, topic: str, total: int, new: Sequence[Sequence[int]]) -> None:
        have = sum(1 for t, _ in self.assignment if t == topic)
        for i, reps in enumerate(new):
            self.assignment[(topic, have + i)] = tuple(reps)
            self.created.append((topic, have + i))


class FakeSubmitter:
    name = "sim"

    def __init__(self, cluster: FakeCluster) -> None:
        self.cluster = cluster

    def submit(self, targets: Mapping[Key, Sequence[int]]) -> None:
        self.cluster.submitted += list(targets)
        self.cluster.alter_reassignments(dict(targets))
