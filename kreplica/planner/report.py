"""The numbers every plan carries: movement vs the lower bound, per-broker load before /
peak / after, spreads, racks and bytes. Pure data (JSON-ready dicts), rendered elsewhere.

Scope of the spreads: a topic's spread counts its replicas on the eligible brokers plus any
live broker holding one of its replicas before or after; the cluster spread does the same over
all topics. Dead brokers are left out: their counts measure the incident, not the plan.
"Peak" is each broker's replica count while every reassignment of the plan is in flight at
once (Kafka keeps old and new replicas until the move completes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kreplica.model import ClusterSnapshot, PartitionChange
from kreplica.planner.context import Fallback
from kreplica.planner.evaluate import (
    leaders_per_broker,
    rack_key,
    rack_violations,
    replicas_per_broker,
    spread,
)

Assignment = dict[tuple[str, int], tuple[int, ...]]


@dataclass
class LowerBound:
    """The fewest replicas any plan must add / remove, and the bytes it must copy."""

    added: int = 0
    removed: int = 0
    bytes: int | None = 0

    def add_partition(self, added: int, removed: int, size: int | None) -> None:
        self.added += added
        self.removed += removed
        if added and self.bytes is not None:
            self.bytes = None if size is None else self.bytes + added * size


def full_assignment(snapshot: ClusterSnapshot) -> Assignment:
    return {(t.name, p.partition): p.replicas for t in snapshot.topics for p in t.partitions}


def _scope_brokers(eligible: Iterable[int], *assignments: Mapping[Any, Sequence[int]]) -> set[int]:
    brokers = set(eligible)
    for assignment in assignments:
        for reps in assignment.values():
            brokers.update(reps)
    return brokers


def _spread_over(assignment: Assignment, scope: set[int]) -> int:
    """Replica spread over the brokers in `scope` only (replicas elsewhere do not count)."""
    counts = replicas_per_broker(assignment, scope)
    return spread({b: n for b, n in counts.items() if b in scope})


def _actual_leaders(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> dict[int, int]:
    """Partitions each broker leads now (the preferred leader where the source has no leader;
    an offline partition counts nowhere)."""
    counts = dict.fromkeys(brokers, 0)
    for t in snapshot.topics:
        for p in t.partitions:
            leader = p.current_leader
            if leader is not None:
                counts[leader] = counts.get(leader, 0) + 1
    return dict(sorted(counts.items()))


def build_report(
    *,
    snapshot: ClusterSnapshot,
    strategy: str,
    eligible: Sequence[int],
    topics: Sequence[str],
    changes: Sequence[PartitionChange],
    lower_bound: LowerBound,
    fallbacks: Sequence[Fallback],
) -> dict[str, Any]:
    racks = snapshot.racks()
    before = full_assignment(snapshot)
    after = dict(before)
    for c in changes:
        after[(c.topic, c.partition)] = c.after
    all_brokers = sorted(_scope_brokers(snapshot.broker_ids(), before, after))
    alive = [b.id for b in snapshot.brokers if b.alive]
    live = set(alive)
    leaders_now = {
        (t.name, p.partition): p.current_leader for t in snapshot.topics for p in t.partitions
    }

    existing = [c for c in changes if not c.is_new]
    created = [c for c in changes if c.is_new]
    replicas_added = sum(len(c.added) for c in changes)
    replicas_removed = sum(len(c.removed) for c in existing)
    moved = sum(min(len(c.added), len(c.removed)) for c in existing)

    sizes_known = all(c.size_bytes is not None for c in existing if c.added)
    has_racks = any(r is not None for r in racks.values())
    bytes_in = dict.fromkeys(all_brokers, 0)
    bytes_out = dict.fromkeys(all_brokers, 0)
    peak = replicas_per_broker(before, all_brokers)
    for c in changes:
        for b in c.added:
            peak[b] = peak.get(b, 0) + 1
    bytes_to_move = 0
    cross_rack = 0
    for c in existing:
        size = c.size_bytes or 0
        leader = leaders_now.get((c.topic, c.partition))
        source = leader if leader is not None else c.leader_before  # offline: the preferred
        for b in c.added:
            bytes_to_move += size
            bytes_in[b] = bytes_in.get(b, 0) + size
            if source is not None:
                bytes_out[source] = bytes_out.get(source, 0) + size
                if rack_key(racks, source) != rack_key(racks, b):
                    cross_rack += size

    topic_spread_before: dict[str, int] = {}
    topic_spread_after: dict[str, int] = {}
    topic_set = set(topics)
    before_scope = {k: v for k, v in before.items() if k[0] in topic_set}
    after_scope = {k: v for k, v in after.items() if k[0] in topic_set}
    by_topic_before: dict[str, Assignment] = {name: {} for name in topic_set}
    by_topic_after: dict[str, Assignment] = {name: {} for name in topic_set}
    for k, v in before_scope.items():
        by_topic_before[k[0]][k] = v
    for k, v in after_scope.items():
        by_topic_after[k[0]][k] = v
    for name in sorted(topic_set):
        tb, ta = by_topic_before[name], by_topic_after[name]
        scope = _scope_brokers(eligible, tb, ta) & live
        topic_spread_before[name] = _spread_over(tb, scope)
        topic_spread_after[name] = _spread_over(ta, scope)
    cluster_scope = _scope_brokers(eligible, before, after) & live

    return {
        "strategy": strategy,
        "topics": sorted(topic_set),
        "eligible_brokers": list(eligible),
        "partitions_changed": sum(1 for c in existing if c.changed),
        "partitions_created": len(created),
        "replicas_added": replicas_added,
        "replicas_removed": replicas_removed,
        "existing_replicas_moved": moved,
        "lower_bound_replicas_added": lower_bound.added,
        "lower_bound_replicas_removed": lower_bound.removed,
        "bytes_to_move": bytes_to_move if sizes_known else None,
        "bytes_lower_bound": lower_bound.bytes,
        "cross_rack_bytes": cross_rack if sizes_known and has_racks else None,
        "leaders_changed": sum(1 for c in existing if c.leader_changed),
        "rack_violations_before": len(rack_violations(before_scope, racks, alive)),
        "rack_violations_after": len(rack_violations(after_scope, racks, alive)),
        "broker_replicas_before": replicas_per_broker(before, all_brokers),
        "broker_replicas_peak": dict(sorted(peak.items())),
        "broker_replicas_after": replicas_per_broker(after, all_brokers),
        "broker_leaders_before": _actual_leaders(snapshot, all_brokers),
        "broker_preferred_leaders_before": leaders_per_broker(before, all_brokers),
        "broker_leaders_after": leaders_per_broker(after, all_brokers),
        "broker_bytes_in": dict(sorted(bytes_in.items())),
        "broker_bytes_out": dict(sorted(bytes_out.items())),
        "topic_spread_before": topic_spread_before,
        "topic_spread_after": topic_spread_after,
        "cluster_spread_before": _spread_over(before, cluster_scope),
        "cluster_spread_after": _spread_over(after, cluster_scope),
        "fallbacks": [
            {"topic": f.topic, "partition": f.partition, "reason": f.reason}
            for f in sorted(fallbacks, key=lambda f: (f.topic, f.partition, f.reason))
        ],
    }
