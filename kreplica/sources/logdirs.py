"""What a DescribeLogDirs answer tells (pure): each broker's log dirs and disk figures, where
each replica lives and its size. The answer is kafka-python's describe_log_dirs result, one
entry per broker (kreplica.sources.kafkawire answers in the same shape)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kreplica.model import Broker, ClusterSnapshot, LogDir, Partition


def replica_sizes(log_dirs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    """(topic, partition) → size of its largest replica, from kafka-python's describe_log_dirs
    result (one entry per broker). Future replicas (a log-dir move in progress) are skipped."""
    return {
        key: max(size for _, size in placed.values())
        for key, placed in replica_placement(log_dirs).items()
    }


def broker_log_dirs(log_dirs: Iterable[Mapping[str, Any]]) -> dict[int, tuple[str, ...]]:
    """Broker id → the paths of its log dirs (offline ones included: they exist on the broker),
    from kafka-python's describe_log_dirs result."""
    return {
        int(broker["broker"]): tuple(sorted(d["log_dir"] for d in broker.get("log_dirs") or []))
        for broker in log_dirs
        if "broker" in broker
    }


def _figure(value: Any) -> int | None:
    """A DescribeLogDirs byte figure: None when absent or -1 (versions before 4, Kafka < 3.3)."""
    return int(value) if isinstance(value, int) and value >= 0 else None


def broker_disks(log_dirs: Iterable[Mapping[str, Any]]) -> dict[int, tuple[LogDir, ...]]:
    """Broker id → its log dirs with total and usable bytes (DescribeLogDirs v4, KIP-827), by
    path, from kafka-python's describe_log_dirs result. An offline dir (an error code) is
    listed without figures: nothing can be placed on it."""
    out: dict[int, tuple[LogDir, ...]] = {}
    for broker in log_dirs:
        if "broker" not in broker:
            continue
        dirs = []
        for d in broker.get("log_dirs") or []:
            online = not d.get("error_code", 0)
            total = _figure(d.get("total_bytes")) if online else None
            usable = _figure(d.get("usable_bytes")) if online else None
            dirs.append(LogDir(d["log_dir"], total, usable))
        out[int(broker["broker"])] = tuple(sorted(dirs, key=lambda d: d.path))
    return out


def current_replicas(
    log_dirs: Iterable[Mapping[str, Any]],
) -> Iterator[tuple[int, str, str, int, int]]:
    """(broker, dir, topic, partition, size) of each replica in kafka-python's
    describe_log_dirs result, from the dirs that answered. Future replicas (a dir move in
    progress) are skipped: the replica still lives, and is still read, in its current dir."""
    for broker in log_dirs:
        if "broker" not in broker:
            continue
        broker_id = int(broker["broker"])
        for log_dir in broker.get("log_dirs") or []:
            if log_dir.get("error_code", 0):
                continue
            path = log_dir["log_dir"]
            for topic in log_dir.get("topics") or []:
                name = topic.get("name")
                for partition in topic.get("partitions") or []:
                    if partition.get("is_future_key"):
                        continue
                    size = int(partition.get("partition_size", 0))
                    yield broker_id, path, name, partition["partition_index"], size


def replica_placement(
    log_dirs: Iterable[Mapping[str, Any]],
) -> dict[tuple[str, int], dict[int, tuple[str, int]]]:
    """(topic, partition) → {broker: (its dir, its replica's size)} (current_replicas)."""
    out: dict[tuple[str, int], dict[int, tuple[str, int]]] = {}
    for broker_id, path, name, number, size in current_replicas(log_dirs):
        out.setdefault((name, number), {})[broker_id] = (path, size)
    return out


class LogDirs:
    """What one DescribeLogDirs round adds to a snapshot, indexed once: each broker's dirs and
    disk figures, and where each replica lives with its size."""

    def __init__(self, log_dirs: Iterable[Mapping[str, Any]]) -> None:
        answer = list(log_dirs)
        self.dirs = broker_log_dirs(answer)
        self.disks = broker_disks(answer)
        self.placement = replica_placement(answer)

    def broker(self, b: Broker) -> Broker:
        if b.id not in self.dirs:
            return b
        return dataclasses.replace(b, log_dirs=self.dirs[b.id], disks=self.disks.get(b.id))

    def partition(
        self,
        topic: str,
        partition: int,
        replicas: tuple[int, ...],
        leader: int | None,
        isr: tuple[int, ...] | None,
        adding: tuple[int, ...],
        removing: tuple[int, ...],
        size_bytes: int | None = None,
    ) -> Partition:
        """A Partition with its size and per-replica dirs and sizes, built in one call (a
        dataclasses.replace per partition cost most of a second at 20,000 partitions)."""
        placed = self.placement.get((topic, partition))
        if placed:
            size_bytes = max(size for _, size in placed.values())
        own_dirs, own_sizes = per_replica(replicas, placed)
        return Partition(
            topic=topic,
            partition=partition,
            replicas=replicas,
            leader=leader,
            isr=isr,
            size_bytes=size_bytes,
            adding_replicas=adding,
            removing_replicas=removing,
            replica_dirs=own_dirs,
            replica_sizes=own_sizes,
        )


def with_log_dirs(
    snapshot: ClusterSnapshot, log_dirs: Iterable[Mapping[str, Any]]
) -> ClusterSnapshot:
    """The snapshot with what DescribeLogDirs adds and ZooKeeper does not hold: each broker's
    log dirs and disk figures, each partition's size, each replica's dir and own size."""
    index = LogDirs(log_dirs)
    topics = tuple(
        dataclasses.replace(
            topic,
            partitions=tuple(
                index.partition(
                    p.topic,
                    p.partition,
                    p.replicas,
                    p.leader,
                    p.isr,
                    p.adding_replicas,
                    p.removing_replicas,
                    p.size_bytes,
                )
                for p in topic.partitions
            ),
        )
        for topic in snapshot.topics
    )
    return dataclasses.replace(
        snapshot, brokers=tuple(map(index.broker, snapshot.brokers)), topics=topics
    )


def per_replica(
    replicas: tuple[int, ...], placed: Mapping[int, tuple[str, int]] | None
) -> tuple[tuple[str | None, ...] | None, tuple[int | None, ...] | None]:
    """A partition's replica_dirs and replica_sizes (replicas' order), None when unknown."""
    if not placed:
        return None, None
    found = [placed.get(b, _UNPLACED) for b in replicas]
    return tuple([f[0] for f in found]), tuple([f[1] for f in found])


_UNPLACED: tuple[None, None] = (None, None)  # a replica DescribeLogDirs did not list
