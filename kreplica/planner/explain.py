"""`kreplica explain TOPIC`: is this topic's layout Kafka's default, and how balanced is it."""

from __future__ import annotations

from typing import Any

from kreplica.kafka import KafkaLayout, infer_layout
from kreplica.model import ClusterSnapshot, Topic
from kreplica.planner.evaluate import (
    distinct_racks,
    has_rack_violation,
    leaders_per_broker,
    rack_count,
    replicas_per_broker,
    spread,
)


def _added_partitions(layout: KafkaLayout | None) -> list[int]:
    """Partitions recognised as placed by a later ZK add-partitions call."""
    if layout is None:
        return []
    return sorted(p for first, stop in layout.added_batches for p in range(first, stop))


def explain_topic(snapshot: ClusterSnapshot, topic: str) -> dict[str, Any]:
    t = snapshot.topic(topic)
    assignment = {(t.name, p.partition): p.replicas for p in t.partitions}
    racks = snapshot.racks()
    alive = [b.id for b in snapshot.brokers if b.alive]
    topic_brokers = sorted({b for reps in assignment.values() for b in reps})
    scope = sorted(set(alive) | set(topic_brokers))
    per_broker = replicas_per_broker(assignment, scope)
    available = rack_count(racks, alive)
    violations = [
        pid
        for (_, pid), reps in sorted(assignment.items())
        if has_rack_violation(racks, reps, available)
    ]
    racks_min = min((distinct_racks(racks, reps) for reps in assignment.values()), default=0)

    layout = infer_layout(t.assignment(), snapshot.broker_ids(), racks)
    added = _added_partitions(layout)
    nonconforming = (
        sorted(layout.nonconforming)
        if layout is not None
        else sorted(p.partition for p in t.partitions)
    )
    kafka_default = layout is not None and not nonconforming
    layout_doc = {
        "kafka_default": kafka_default,
        "broker_list": list(layout.broker_list) if layout is not None else None,
        "start_index": layout.start_index if layout is not None else None,
        "replica_shift": layout.replica_shift if layout is not None else None,
        "nonconforming_partitions": nonconforming,
        "added_partitions": added,
        "rack_aware": bool(layout.rack_aware) if layout is not None else False,
    }
    has_racks = any(racks.get(b) is not None for b in scope)
    summary = _summary(t, layout_doc, spread(per_broker), violations, has_racks)
    return {
        "topic": t.name,
        "partitions": len(t.partitions),
        "replication_factor": t.replication_factor,
        "layout": layout_doc,
        "balance": {
            "replicas_per_broker": per_broker,
            "leaders_per_broker": leaders_per_broker(assignment, scope),
            "spread": spread(per_broker),
        },
        "racks": {"violations": violations, "racks_per_partition_min": racks_min},
        "summary": summary,
    }


def _summary(
    topic: Topic, layout: dict[str, Any], balance_spread: int, violations: list[int], racks: bool
) -> str:
    parts: list[str] = []
    if layout["kafka_default"]:
        parts.append(
            f"Kafka's default layout (broker list {layout['broker_list']}, start index "
            f"{layout['start_index']}, replica shift {layout['replica_shift']})"
        )
    elif layout["broker_list"] is not None:
        odd = layout["nonconforming_partitions"]
        added = layout["added_partitions"]
        text = (
            f"Kafka's layout (broker list {layout['broker_list']}, start index "
            f"{layout['start_index']}, replica shift {layout['replica_shift']}) except "
            f"{len(odd)} partition(s) {odd[:10]}"
        )
        if added:
            text += f"; partition(s) {added[:10]} match a later add-partitions"
        parts.append(text)
    else:
        parts.append("not a Kafka default layout (assigned by hand or by another tool)")
    parts.append(f"replicas per broker differ by at most {balance_spread}")
    if racks:
        parts.append(
            f"{len(violations)} partition(s) violate rack diversity"
            if violations
            else "every partition spans as many racks as it can"
        )
    return f"topic {topic.name!r}: " + "; ".join(parts) + "."
