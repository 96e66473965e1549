"""`kreplica explain TOPIC`: is this topic's layout Kafka's default, and how balanced is it.

Two placements are tried: ZooKeeper mode's ``AdminUtils`` (with ZK add-partitions) through
:func:`~kreplica.kafka.infer_layout`, and KRaft's ``StripedReplicaPlacer`` through
:func:`~kreplica.planner.striped.match_striped`. The one that explains more partitions is the
closest; it is named as the topic's placement only when it explains more than half of them.
"""

from __future__ import annotations

from dataclasses import replace
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
from kreplica.planner.striped import StripedMatch, match_striped

ZOOKEEPER = "zookeeper"
KRAFT_STRIPED = "kraft-striped"


def added_partitions(layout: KafkaLayout, assignment: dict[int, tuple[int, ...]]) -> list[int]:
    """Partitions that only a later ZK add-partitions call explains.

    A partition the creation layout also reproduces is not claimed: the topic could as well
    have been created with it.
    """
    claimed = sorted(p for first, stop in layout.added_batches for p in range(first, stop))
    if not claimed:
        return []
    rf = max(len(r) for r in assignment.values())
    created = replace(layout, added_ranges=()).extend(max(assignment) + 1, rf)
    return [p for p in claimed if list(assignment[p]) != created[p][: len(assignment[p])]]


def _replication_factors(topic: Topic) -> dict[int, int]:
    counts: dict[int, int] = {}
    for p in topic.partitions:
        counts[len(p.replicas)] = counts.get(len(p.replicas), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], -kv[0])))


def _layout_doc(
    snapshot: ClusterSnapshot, t: Topic, inferred: tuple[KafkaLayout | None] | None = None
) -> dict[str, Any]:
    """`inferred`: ZooKeeper mode's layout when the caller has inferred it already."""
    assignment = t.assignment()
    racks = snapshot.racks()
    if inferred is not None:
        zk = inferred[0]
    else:
        zk = infer_layout(assignment, snapshot.broker_ids(), racks) if assignment else None
    striped: StripedMatch | None = (
        match_striped(assignment, snapshot.broker_ids(), racks) if assignment else None
    )
    zk_added = added_partitions(zk, assignment) if zk is not None else []
    return layout_fields(sorted(assignment), zk, striped, zk_added)


def layout_fields(
    ids: list[int], zk: KafkaLayout | None, striped: StripedMatch | None, zk_added: list[int]
) -> dict[str, Any]:
    """The layout part of an explanation, from the two placements' fits: `ids` the topic's
    partition ids, `zk_added` the partitions only a later add-partitions call explains."""
    fits = {
        ZOOKEEPER: len(zk.conforming) if zk is not None else 0,
        KRAFT_STRIPED: len(striped.fitting) if striped is not None else 0,
    }
    # Ties go to ZooKeeper mode (its layout has parameters the kafka strategy can extend),
    # unless it needs add-partitions calls the striped placement does without.
    closest: str | None = None
    if fits[ZOOKEEPER] or fits[KRAFT_STRIPED]:
        zk_first = (fits[ZOOKEEPER], not zk_added) >= (fits[KRAFT_STRIPED], True)
        closest = ZOOKEEPER if zk_first else KRAFT_STRIPED
    if closest == ZOOKEEPER and zk is not None:
        nonconforming = sorted(zk.nonconforming)
    elif closest == KRAFT_STRIPED and striped is not None:
        nonconforming = sorted(striped.nonconforming)
    else:
        nonconforming = ids
    fitting = len(ids) - len(nonconforming)
    placement = closest if ids and fitting * 2 > len(ids) else None
    zk_shown = zk if closest == ZOOKEEPER else None
    added = zk_added if placement == ZOOKEEPER else []
    return {
        "kafka_default": placement is not None and not nonconforming,
        "broker_list": list(zk_shown.broker_list) if zk_shown is not None else None,
        "start_index": zk_shown.start_index if zk_shown is not None else None,
        "replica_shift": zk_shown.replica_shift if zk_shown is not None else None,
        "nonconforming_partitions": nonconforming,
        "added_partitions": added,
        "rack_aware": (
            bool(zk_shown.rack_aware)
            if zk_shown is not None
            else closest == KRAFT_STRIPED and striped is not None and len(striped.racks) > 1
        ),
        "placement": placement,
        "closest_placement": closest,
        "fitting_partitions": fitting,
        "placement_fits": fits,
        "striped_cycle": (
            striped.cycle_length if closest == KRAFT_STRIPED and striped is not None else None
        ),
    }


def layout_verdict(snapshot: ClusterSnapshot, t: Topic) -> tuple[bool, str | None]:
    """What `explain_topic`'s layout says, in short: (Kafka's default, the placement or else
    the closest one). The same answer at a fraction of the cost for the common case: when
    ZooKeeper mode's layout reproduces every partition without add-partitions, ties go to it
    and the striped placement (the costlier search) cannot change the verdict."""
    assignment = t.assignment()
    zk = infer_layout(assignment, snapshot.broker_ids(), snapshot.racks()) if assignment else None
    if zk is not None and not zk.nonconforming and not added_partitions(zk, assignment):
        return True, ZOOKEEPER
    doc = _layout_doc(snapshot, t, (zk,))
    placement = doc["placement"] or doc["closest_placement"]
    return bool(doc["kafka_default"]), placement


def default_or_closest(snapshot: ClusterSnapshot, t: Topic) -> tuple[bool, str | None]:
    """What the fleet audit asks of a layout: (True, None) when it is Kafka's default, else
    (False, the closest placement or None): `layout_verdict` without naming the placement of
    a default layout, which lets the search stop at the first ZooKeeper-mode layout that
    reproduces every partition (no striped search, no other candidates)."""
    assignment = t.assignment()
    if not assignment:
        return False, None
    zk = infer_layout(assignment, snapshot.broker_ids(), snapshot.racks(), any_complete=True)
    if zk is not None and not zk.nonconforming:
        return True, None
    doc = _layout_doc(snapshot, t, (zk,))
    if doc["kafka_default"]:
        return True, None
    return False, doc["placement"] or doc["closest_placement"]


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
    return topic_doc(
        t.name,
        len(t.partitions),
        t.replication_factor,
        _layout_doc(snapshot, t),
        _replication_factors(t),
        per_broker,
        leaders_per_broker(assignment, scope),
        violations,
        racks_min,
        any(racks.get(b) is not None for b in scope),
    )


def topic_doc(
    name: str,
    partitions: int,
    replication_factor: int,
    layout_doc: dict[str, Any],
    rfs: dict[int, int],
    per_broker: dict[int, int],
    leaders: dict[int, int],
    violations: list[int],
    racks_min: int,
    has_racks: bool,
) -> dict[str, Any]:
    """One topic's explanation from its measures (`replication_factor`: as Kafka reports
    it, partition 0's replica count)."""
    summary = _summary(name, partitions, layout_doc, rfs, spread(per_broker), violations, has_racks)
    return {
        "topic": name,
        "partitions": partitions,
        "replication_factor": replication_factor,
        "replication_factors": rfs,
        "mixed_rf": len(rfs) > 1,
        "layout": layout_doc,
        "balance": {
            "replicas_per_broker": per_broker,
            "leaders_per_broker": leaders,
            "spread": spread(per_broker),
        },
        "racks": {"violations": violations, "racks_per_partition_min": racks_min},
        "summary": summary,
    }


def placement_words(layout: dict[str, Any]) -> str:
    """The closest placement with its parameters, for summaries and renderers."""
    if layout.get("closest_placement") == KRAFT_STRIPED:
        cycle = layout.get("striped_cycle")
        return (
            "KRaft's striped placement (racks alternate per partition, brokers take turns "
            f"within each rack, reshuffled every {cycle} partitions)"
        )
    return (
        f"ZooKeeper-mode placement (broker list {layout['broker_list']}, start index "
        f"{layout['start_index']}, replica shift {layout['replica_shift']})"
    )


def _summary(
    name: str,
    total: int,
    layout: dict[str, Any],
    rfs: dict[int, int],
    balance_spread: int,
    violations: list[int],
    racks: bool,
) -> str:
    parts: list[str] = []
    odd = layout["nonconforming_partitions"]
    if layout["placement"] is not None and not odd:
        parts.append(f"Kafka's default layout, {placement_words(layout)}")
    elif layout["placement"] is not None:
        parts.append(
            f"Kafka's layout, {placement_words(layout)}, except {len(odd)} partition(s) {odd[:10]}"
        )
    elif layout["closest_placement"] is not None:
        parts.append(
            f"not Kafka's default placement: only {layout['fitting_partitions']} of {total} "
            f"partition(s) fit {placement_words(layout)}"
        )
    else:
        parts.append("not a Kafka default layout (assigned by hand or by another tool)")
    if layout["added_partitions"]:
        parts.append(f"partition(s) {layout['added_partitions'][:10]} match a later add-partitions")
    if len(rfs) > 1:
        counts = ", ".join(f"RF {rf} on {n} partition(s)" for rf, n in rfs.items())
        parts.append(f"mixed replication factors: {counts}")
    parts.append(f"replicas per broker differ by at most {balance_spread}")
    if racks:
        parts.append(
            f"{len(violations)} partition(s) violate rack diversity"
            if violations
            else "every partition spans as many racks as it can"
        )
    return f"topic {name!r}: " + "; ".join(parts) + "."
