"""build_report in one pass over the snapshot reports exactly what the per-measure passes did.

`reference_report` is build_report as it was (a dict of the whole assignment per measure),
kept here as the oracle; hypothesis compares the two, key order included, on random
snapshots (racks, dead and unlisted brokers, unknown and offline leaders) and random changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kreplica.model import Broker, ClusterSnapshot, Partition, PartitionChange, Topic
from kreplica.planner.context import Fallback
from kreplica.planner.evaluate import (
    leaders_per_broker,
    rack_key,
    rack_violations,
    replicas_per_broker,
    spread,
)
from kreplica.planner.report import LowerBound, build_report, full_assignment

Assignment = dict[tuple[str, int], tuple[int, ...]]


def _scope_brokers(eligible: Iterable[int], *assignments: Mapping[Any, Sequence[int]]) -> set[int]:
    brokers = set(eligible)
    for assignment in assignments:
        for reps in assignment.values():
            brokers.update(reps)
    return brokers


def _spread_over(assignment: Assignment, scope: set[int]) -> int:
    counts = replicas_per_broker(assignment, scope)
    return spread({b: n for b, n in counts.items() if b in scope})


def _actual_leaders(snapshot: ClusterSnapshot, brokers: Iterable[int]) -> dict[int, int]:
    counts = dict.fromkeys(brokers, 0)
    for t in snapshot.topics:
        for p in t.partitions:
            leader = p.current_leader
            if leader is not None:
                counts[leader] = counts.get(leader, 0) + 1
    return dict(sorted(counts.items()))


def reference_report(
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


@st.composite
def cases(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[PartitionChange], list[int], list[str]]:
    ids = sorted(draw(st.sets(st.integers(0, 12), min_size=1, max_size=7)))
    racked = draw(st.sampled_from(["none", "all", "some"]))
    brokers = tuple(
        Broker(
            b,
            rack=None if racked == "none" or (racked == "some" and b % 2) else f"r{b % 3}",
            alive=draw(st.booleans()) or b % 4 != 0,
        )
        for b in ids
    )
    pool = [*ids, 20, 21]  # 20, 21: replicas on brokers the snapshot does not list
    topics, changes = [], []
    for t in range(draw(st.integers(1, 3))):
        name = f"t{t}"
        parts = []
        for p in range(draw(st.integers(0, 5))):
            reps = tuple(draw(st.permutations(pool))[: draw(st.integers(0, 3))])
            leader = draw(st.one_of(st.none(), st.just(-1), st.sampled_from(pool)))
            size = draw(st.one_of(st.none(), st.integers(0, 100)))
            parts.append(Partition(name, p, reps, leader=leader, size_bytes=size))
            if draw(st.booleans()):
                after = tuple(draw(st.permutations(pool))[: draw(st.integers(1, 4))])
                changes.append(
                    PartitionChange(
                        name, p, reps, after, size, leader if leader not in (None, -1) else None
                    )
                )
        for p in range(len(parts), len(parts) + draw(st.integers(0, 2))):
            after = tuple(draw(st.permutations(pool))[: draw(st.integers(1, 3))])
            changes.append(PartitionChange(name, p, None, after, 0))
        topics.append(Topic(name, tuple(parts)))
    snap = ClusterSnapshot(brokers=brokers, topics=tuple(topics))
    eligible = draw(st.lists(st.sampled_from(pool), unique=True))
    asked = draw(st.lists(st.sampled_from([t.name for t in topics]), unique=True))
    return snap, changes, eligible, asked


@settings(deadline=None, max_examples=300)
@given(case=cases(), added=st.integers(0, 9), removed=st.integers(0, 9))
def test_one_pass_report_is_the_per_measure_report(
    case: tuple[ClusterSnapshot, list[PartitionChange], list[int], list[str]],
    added: int,
    removed: int,
) -> None:
    snap, changes, eligible, asked = case
    args: dict[str, Any] = {
        "snapshot": snap,
        "strategy": "balanced",
        "eligible": eligible,
        "topics": asked,
        "changes": changes,
        "lower_bound": LowerBound(added, removed, None),
        "fallbacks": [Fallback("t0", 1, "x")],
    }
    got, want = build_report(**args), reference_report(**args)
    assert json.dumps(got) == json.dumps(want)  # key order too: renderers iterate these


def test_full_assignment_still_lists_every_partition() -> None:
    snap = ClusterSnapshot(brokers=(Broker(1),), topics=(Topic("a", (Partition("a", 0, (1,)),)),))
    assert full_assignment(snap) == {("a", 0): (1,)}
