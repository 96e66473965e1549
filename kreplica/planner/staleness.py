"""Is a kreplica plan document still about this cluster, as it is now?

A plan records the cluster id and the replicas of every partition it changes. Checking and
applying a plan made for another cluster, or against partitions that changed since, would
act on a state nobody reviewed: both are refused with StalePlan. Kafka's bare reassignment
JSON records neither, so only plan documents can be checked this way.
"""

from __future__ import annotations

from typing import Any

from kreplica.errors import StalePlan
from kreplica.model import ClusterSnapshot
from kreplica.planner.serialize import parse_new_partitions, parse_plan_before

SHOWN_DRIFTS = 3  # enough to recognise the change, short enough for one line


def ensure_plan_is_current(snapshot: ClusterSnapshot, data: Any) -> None:
    """Raise StalePlan when a kreplica plan document was made for another cluster or its
    partitions no longer look as they did when it was made. Bare Kafka JSON passes."""
    if not isinstance(data, dict) or "kreplica_plan" not in data:
        return
    planned_for = data.get("cluster_id")
    if planned_for and snapshot.cluster_id and planned_for != snapshot.cluster_id:
        raise StalePlan(
            f"this plan was made for cluster {planned_for}, but this is cluster "
            f"{snapshot.cluster_id}; point kreplica at the right cluster or make a new plan here"
        )
    current = {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}
    drifts: list[str] = []
    for topic, partition, replicas in parse_plan_before(data):
        now = current.get((topic, partition))
        if now != replicas:
            state = "is gone" if now is None else f"is now {list(now)}"
            drifts.append(f"{topic}-{partition} was {list(replicas)} and {state}")
    for topic, partition, _ in parse_new_partitions(data):
        if (topic, partition) in current:
            drifts.append(f"{topic}-{partition} was to be created and exists now")
    if drifts:
        shown = "; ".join(drifts[:SHOWN_DRIFTS])
        more = f" (and {len(drifts) - SHOWN_DRIFTS} more)" if len(drifts) > SHOWN_DRIFTS else ""
        raise StalePlan(
            f"the cluster changed since this plan was made: {shown}{more}; "
            "make a new plan from the current state"
        )
