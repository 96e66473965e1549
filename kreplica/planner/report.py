"""The numbers every plan carries: movement vs the lower bound, per-broker load before /
peak / after, spreads, racks and bytes. Pure data (JSON-ready dicts), rendered elsewhere.

Scope of the spreads: a topic's spread counts its replicas on the eligible brokers plus any
live broker holding one of its replicas before or after; the cluster spread does the same over
all topics. Dead brokers are left out: their counts measure the incident, not the plan.
"Peak" is each broker's replica count while every reassignment of the plan is in flight at
once (Kafka keeps old and new replicas until the move completes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, itemgetter

from kreplica.gcpause import gc_paused
from kreplica.model import ClusterSnapshot, Finding, Partition, PartitionChange, PlanReport
from kreplica.planner.context import Fallback
from kreplica.planner.evaluate import (
    has_rack_violation,
    rack_count,
    rack_key,
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


@gc_paused()  # millions of acyclic objects: see kreplica/gcpause.py
def build_report(
    *,
    snapshot: ClusterSnapshot,
    strategy: str,
    eligible: Sequence[int],
    topics: Sequence[str],
    changes: Sequence[PartitionChange],
    lower_bound: LowerBound,
    fallbacks: Sequence[Fallback],
) -> PlanReport:
    """The report of a plan. One pass over the snapshot's partitions (counts per broker, per
    topic asked for, leaders, rack violations), then work per change only: a million
    partitions cost a few C-level counting passes, not a dict of the whole assignment per
    measure."""
    racks = snapshot.racks()
    alive = [b.id for b in snapshot.brokers if b.alive]
    live = set(alive)
    topic_set = set(topics)
    available_racks = rack_count(racks, alive)
    violates = _ViolationMemo(racks, available_racks)

    # the snapshot, counted once
    before_counts: Counter[int] = Counter()
    preferred_before: Counter[int] = Counter()
    actual_leaders: Counter[int] = Counter()
    topic_before: dict[str, Counter[int]] = {}
    violations_before = 0
    parts_of: dict[str, Mapping[int, Partition]] = {}
    changed_topics = {c.topic for c in changes}
    for t in snapshot.topics:
        replica_lists = list(map(_REPLICAS, t.partitions))
        counts = Counter(chain.from_iterable(replica_lists))
        before_counts.update(counts)
        preferred_before.update(map(_FIRST, filter(None, replica_lists)))
        _count_leaders(actual_leaders, t.partitions)
        if t.name in topic_set:
            topic_before[t.name] = counts
            violations_before += sum(map(violates.__getitem__, replica_lists))
        if t.name in changed_topics:
            parts_of[t.name] = {p.partition: p for p in t.partitions}

    # the changes, one by one (the last change of a partition wins, as in a dict)
    by_key: dict[tuple[str, int], PartitionChange] = {}
    for c in changes:
        by_key[(c.topic, c.partition)] = c
    after_counts = dict(before_counts)
    preferred_after = dict(preferred_before)
    topic_after = {name: dict(topic_before.get(name, ())) for name in topic_set}
    violations_after = violations_before
    no_parts: Mapping[int, Partition] = {}
    for (name, pid), c in by_key.items():
        part = parts_of.get(name, no_parts).get(pid)
        old = part.replicas if part is not None else None
        new = c.after
        for b in new:
            after_counts[b] = after_counts.get(b, 0) + 1
        if new:
            preferred_after[new[0]] = preferred_after.get(new[0], 0) + 1
        if old is not None:
            for b in old:
                after_counts[b] -= 1
            if old:
                preferred_after[old[0]] -= 1
        ta = topic_after.get(name)
        if ta is not None:
            for b in new:
                ta[b] = ta.get(b, 0) + 1
            violations_after += violates[new]
            if old is not None:
                for b in old:
                    ta[b] -= 1
                violations_after -= violates[old]

    used_before = {b for b, n in before_counts.items() if n > 0}
    used_after = {b for b, n in after_counts.items() if n > 0}
    all_brokers = sorted(set(snapshot.broker_ids()) | used_before | used_after)

    replicas_added = replicas_removed = moved = 0
    partitions_changed = created = leaders_changed = 0
    sizes_known = True
    has_racks = any(r is not None for r in racks.values())
    bytes_in = dict.fromkeys(all_brokers, 0)
    bytes_out = dict.fromkeys(all_brokers, 0)
    peak = dict.fromkeys(all_brokers, 0)
    for b, n in before_counts.items():
        peak[b] = n
    bytes_to_move = 0
    cross_rack = 0
    rack_of = {b: rack_key(racks, b) for b in all_brokers}
    for c in changes:
        before, after = c.before, c.after
        if before is None:  # a new partition: every replica is added
            created += 1
            replicas_added += len(after)
            for b in after:
                peak[b] += 1
            continue
        added = [b for b in after if b not in before]
        removed = sum(1 for b in before if b not in after)
        replicas_added += len(added)
        replicas_removed += removed
        moved += min(len(added), removed)
        if before != after:
            partitions_changed += 1
        leader_before = c.leader_now if c.leader_now is not None else (before or (None,))[0]
        if leader_before != (after[0] if after else None):
            leaders_changed += 1
        if not added:
            continue
        for b in added:
            peak[b] += 1
        if c.size_bytes is None:
            sizes_known = False
        size = c.size_bytes or 0
        part = parts_of.get(c.topic, no_parts).get(c.partition)
        leader = part.current_leader if part is not None else None
        source = leader if leader is not None else leader_before  # offline: the preferred
        for b in added:
            bytes_to_move += size
            bytes_in[b] += size
            if source is not None:
                bytes_out[source] = bytes_out.get(source, 0) + size
                source_rack = rack_of[source] if source in rack_of else rack_key(racks, source)
                if source_rack != rack_of[b]:
                    cross_rack += size

    eligible_set = set(eligible)
    topic_spread_before: dict[str, int] = {}
    topic_spread_after: dict[str, int] = {}
    for name in sorted(topic_set):
        tb = topic_before.get(name, Counter())
        ta = topic_after.get(name, Counter())
        scope = (eligible_set | _used(tb) | _used(ta)) & live
        topic_spread_before[name] = _spread_in(tb, scope)
        topic_spread_after[name] = _spread_in(ta, scope)
    cluster_scope = (eligible_set | used_before | used_after) & live

    return {
        "strategy": strategy,
        "topics": sorted(topic_set),
        "eligible_brokers": list(eligible),
        "partitions_changed": partitions_changed,
        "partitions_created": created,
        "replicas_added": replicas_added,
        "replicas_removed": replicas_removed,
        "existing_replicas_moved": moved,
        "lower_bound_replicas_added": lower_bound.added,
        "lower_bound_replicas_removed": lower_bound.removed,
        "bytes_to_move": bytes_to_move if sizes_known else None,
        "bytes_lower_bound": lower_bound.bytes,
        "cross_rack_bytes": cross_rack if sizes_known and has_racks else None,
        "leaders_changed": leaders_changed,
        "rack_violations_before": violations_before,
        "rack_violations_after": violations_after,
        "broker_replicas_before": _per_broker(before_counts, all_brokers),
        "broker_replicas_peak": dict(sorted(peak.items())),
        "broker_replicas_after": _per_broker(after_counts, all_brokers),
        "broker_leaders_before": _per_broker(actual_leaders, all_brokers),
        "broker_preferred_leaders_before": _per_broker(preferred_before, all_brokers),
        "broker_leaders_after": _per_broker(preferred_after, all_brokers),
        "broker_bytes_in": dict(sorted(bytes_in.items())),
        "broker_bytes_out": dict(sorted(bytes_out.items())),
        "topic_spread_before": topic_spread_before,
        "topic_spread_after": topic_spread_after,
        "cluster_spread_before": _spread_in(before_counts, cluster_scope),
        "cluster_spread_after": _spread_in(after_counts, cluster_scope),
        "fallbacks": [
            {"topic": f.topic, "partition": f.partition, "reason": f.reason}
            for f in sorted(fallbacks, key=lambda f: (f.topic, f.partition, f.reason))
        ],
    }


_REPLICAS = attrgetter("replicas")
_FIRST = itemgetter(0)


class _ViolationMemo(dict[Sequence[int], int]):
    """1 when a replica list spans fewer racks than it could, else 0; computed once per
    distinct list (a snapshot shares equal replica tuples)."""

    def __init__(self, racks: Mapping[int, str | None], available: int) -> None:
        super().__init__()
        self.racks = racks
        self.available = available

    def __missing__(self, replicas: Sequence[int]) -> int:
        # one rack or none (every rackless broker is a rack of its own): nothing to violate
        value = self.available > 1 and has_rack_violation(self.racks, replicas, self.available)
        self[replicas] = int(value)
        return int(value)


def _count_leaders(counts: Counter[int], partitions: Sequence[Partition]) -> None:
    """Add each partition's leader now (Partition.current_leader) to `counts`."""
    leaders = Counter(map(_LEADER, partitions))
    unknown = leaders.pop(None, 0)
    for b in [b for b in leaders if b < 0]:  # offline: leads nowhere
        del leaders[b]
    counts.update(leaders)
    if unknown:  # no leader recorded: the preferred one (first replica), if any
        counts.update(p.replicas[0] for p in partitions if p.leader is None and p.replicas)


_LEADER = attrgetter("leader")


def _used(counts: Mapping[int, int]) -> set[int]:
    return {b for b, n in counts.items() if n > 0}


def _spread_in(counts: Mapping[int, int], scope: set[int]) -> int:
    """Replica spread over the brokers in `scope` only (replicas elsewhere do not count)."""
    return spread({b: counts.get(b, 0) for b in scope})


def _per_broker(counts: Mapping[int, int], brokers: Sequence[int]) -> dict[int, int]:
    """`counts` with every broker of `brokers` present, sorted by broker (as
    replicas_per_broker returns them)."""
    out = dict.fromkeys(brokers, 0)
    for b, n in counts.items():
        if n or b in out:
            out[b] = n
    return dict(sorted(out.items()))


def imbalance_note(uneven: Sequence[tuple[int, str]], why: str) -> Finding:
    """The one note on topics left with replica counts per broker differing by more than 1
    ((spread, topic) pairs), naming the worst, and `why` no plan does better."""
    worst_value = max(value for value, _ in uneven)
    worst_topic = min(topic for value, topic in uneven if value == worst_value)
    return Finding(
        "info",
        "imbalance",
        f"{len(uneven)} topic(s) still have replica counts per broker differing by more than "
        f"1 (worst: {worst_topic!r}, by {worst_value}); {why}",
        topic=worst_topic if len(uneven) == 1 else None,
    )
