"""Compact builders for planner tests: clusters from literal matrices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kreplica.model import Broker, ClusterSnapshot, Partition, Topic


def cluster(
    topics: Mapping[str, Sequence[Sequence[int]]],
    *,
    brokers: int | Sequence[int] = 6,
    racks: Mapping[int, str] | int | None = None,
    sizes: Mapping[str, int] | None = None,
    configs: Mapping[str, Mapping[str, str]] | None = None,
    isr: Mapping[tuple[str, int], Sequence[int]] | None = None,
    dead: Sequence[int] = (),
) -> ClusterSnapshot:
    """`racks` as an int n puts broker b on rack f"r{b % n}"."""
    ids = list(range(brokers)) if isinstance(brokers, int) else list(brokers)
    if isinstance(racks, int):
        rack_of: Mapping[int, str] = {b: f"r{b % racks}" for b in ids}
    else:
        rack_of = racks or {}
    built = []
    for name, matrix in sorted(topics.items()):
        parts = tuple(
            Partition(
                name,
                pid,
                tuple(reps),
                size_bytes=(sizes or {}).get(name),
                isr=tuple((isr or {})[(name, pid)]) if (name, pid) in (isr or {}) else None,
            )
            for pid, reps in enumerate(matrix)
        )
        built.append(Topic(name, parts, dict((configs or {}).get(name, {}))))
    return ClusterSnapshot(
        brokers=tuple(Broker(b, rack=rack_of.get(b), alive=b not in dead) for b in ids),
        topics=tuple(built),
        cluster_id="test-cluster",
    )


def after_matrix(snapshot: ClusterSnapshot, plan: object, topic: str) -> list[list[int]]:
    """The topic's replica lists once the plan is applied, by partition id."""
    from kreplica.model import Plan

    assert isinstance(plan, Plan)
    current = {p.partition: list(p.replicas) for p in snapshot.topic(topic).partitions}
    for c in plan.changes:
        if c.topic == topic:
            current[c.partition] = list(c.after)
    return [current[p] for p in sorted(current)]
