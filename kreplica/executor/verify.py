"""`kreplica verify`: the plan's partitions not as planned, or still moving (pure reads)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kreplica.executor.dirmoves import DirKey, ReplicaLog, is_done
from kreplica.executor.planfile import PlanFile
from kreplica.model import ClusterSnapshot

Key = tuple[str, int]


class ReadCluster(Protocol):
    """What verifying needs from a cluster (KafkaCluster is one)."""

    def snapshot(self, topics: Iterable[str] | None = None) -> ClusterSnapshot: ...
    def in_flight(self) -> Mapping[Key, Any]: ...
    def replica_logs(
        self, topics: Sequence[str], brokers: Collection[int]
    ) -> Mapping[DirKey, ReplicaLog]: ...


@dataclass(frozen=True)
class Difference:
    partition: str
    planned: tuple[int, ...]
    now: tuple[int, ...] | None
    moving: bool
    planned_dir: str | None = None  # a replica not yet in its planned log dir: that dir,
    now_dir: str | None = None  # the dir it is in (None: not on the broker)


def verify_plan(cluster: ReadCluster, plan: PlanFile) -> list[Difference]:
    """Partitions not yet as planned (or still in flight); empty when the plan is done."""
    snapshot = cluster.snapshot(plan.topics)
    in_flight = cluster.in_flight()
    current = {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}
    out = []
    for key, planned in sorted({**plan.targets, **plan.new_partitions}.items()):
        now = current.get(key)
        if now != planned or key in in_flight:
            out.append(Difference(f"{key[0]}-{key[1]}", tuple(planned), now, key in in_flight))
    if plan.dirs:
        logs = cluster.replica_logs(plan.dir_topics, snapshot.live_broker_ids())
        for (topic, partition, broker), path in sorted(plan.dirs.items()):
            log = logs.get((topic, partition, broker))
            if not is_done(log, path):
                out.append(
                    Difference(
                        f"{topic}-{partition} on broker {broker}",
                        tuple(current.get((topic, partition), ())),
                        current.get((topic, partition)),
                        log is not None and log.future_path is not None,
                        path,
                        log.path if log is not None else None,
                    )
                )
    return out
