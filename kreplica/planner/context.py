"""The mutable bookkeeping of one planning run: eligible brokers, racks and live load counts.

Every decision the pickers make reads these counts, and every accepted partition change
updates them at once, so later choices see the load earlier ones created.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, itemgetter
from typing import Any

from kreplica.model import ClusterSnapshot, Partition
from kreplica.planner.evaluate import rack_key
from kreplica.planner.loadindex import LeaderOrder, ReplicaOrder

_REPLICAS = attrgetter("replicas")
_SIZE = attrgetter("size_bytes")
_FIRST = itemgetter(0)


@dataclass
class Fallback:
    topic: str
    partition: int
    reason: str


@dataclass
class PlanContext:
    snapshot: ClusterSnapshot
    eligible: tuple[int, ...]  # sorted broker ids new replicas may go to
    live: frozenset[int]  # brokers that are up; a replica anywhere else is on a dead broker
    racks: dict[int, str | None]
    seed: int | None
    use_bytes: bool  # sizes are known: bytes break ties after replica counts
    tiebreak: dict[int, int] = field(default_factory=dict)
    rack_keys: dict[int, str] = field(default_factory=dict)  # cache of rack_key per broker
    topic_replicas: defaultdict[str, defaultdict[int, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    topic_leaders: defaultdict[str, defaultdict[int, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    topic_rack_leaders: defaultdict[str, defaultdict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    cluster_replicas: defaultdict[int, int] = field(default_factory=lambda: defaultdict(int))
    cluster_leaders: defaultdict[int, int] = field(default_factory=lambda: defaultdict(int))
    cluster_bytes: defaultdict[int, int] = field(default_factory=lambda: defaultdict(int))
    fallbacks: list[Fallback] = field(default_factory=list)
    # `eligible` as a set, for membership tests on the hot path (kept in step by __post_init__)
    eligible_set: frozenset[int] = field(init=False, default=frozenset())
    # The load orders of the topic being planned (loadindex.py), built at its first pick and
    # kept current by `account`; counts must change only through account/replace.
    _replica_order: ReplicaOrder | None = field(init=False, default=None, repr=False)
    _leader_order: LeaderOrder | None = field(init=False, default=None, repr=False)
    # racks of `eligible`, cached with the tuple they were counted from (rack_target asks
    # once a partition)
    _eligible_racks: tuple[tuple[int, ...], frozenset[str]] | None = field(
        init=False, default=None, repr=False
    )

    def __post_init__(self) -> None:
        self.eligible_set = frozenset(self.eligible)

    # The disk guard (issue 17), or None: not checked. When set, pick_new_replica skips a
    # broker b unless disk.fits(b, size_bytes) and calls disk.take(b, size_bytes) for the
    # broker it picks (size of the partition being placed, None when unknown).
    disk: Any = None

    @classmethod
    def build(
        cls, snapshot: ClusterSnapshot, eligible: Sequence[int], seed: int | None
    ) -> PlanContext:
        use_bytes = any(p.size_bytes for t in snapshot.topics for p in t.partitions)
        ctx = cls(
            snapshot=snapshot,
            eligible=tuple(sorted(eligible)),
            live=snapshot.live_broker_ids(),
            racks=snapshot.racks(),
            seed=seed,
            use_bytes=use_bytes,
        )
        order = sorted(set(snapshot.broker_ids()) | set(eligible))
        if seed is not None:
            random.Random(seed).shuffle(order)
        ctx.tiebreak = {b: i for i, b in enumerate(order)}
        ctx.rack_keys = {b: rack_key(ctx.racks, b) for b in order}
        ctx._count_snapshot()
        return ctx

    def _count_snapshot(self) -> None:
        """The snapshot's counts, as `_count` of every partition would leave them (the same
        keys, zero bytes included), counted a topic at a time in C (Counter over chained
        replica tuples) instead of a Python call per partition."""
        cluster = self.cluster_replicas
        cluster_bytes = self.cluster_bytes
        cluster_leaders = self.cluster_leaders
        for topic in self.snapshot.topics:
            if not topic.partitions:
                continue
            lists = list(map(_REPLICAS, topic.partitions))
            counts = Counter(chain.from_iterable(lists))
            topic_counts = self.topic_replicas[topic.name]
            for b, n in counts.items():
                topic_counts[b] += n
                cluster[b] += n
            for reps, size in zip(lists, map(_SIZE, topic.partitions), strict=True):
                if size:
                    for b in reps:
                        cluster_bytes[b] += size
                else:
                    for b in reps:
                        cluster_bytes[b] += 0
            leaders = Counter(map(_FIRST, filter(None, lists)))
            if leaders:
                topic_leaders = self.topic_leaders[topic.name]
                rack_leaders = self.topic_rack_leaders[topic.name]
                for b, n in leaders.items():
                    topic_leaders[b] += n
                    rack_leaders[self.rack(b)] += n
                    cluster_leaders[b] += n

    def rack(self, broker: int) -> str:
        key = self.rack_keys.get(broker)
        return key if key is not None else rack_key(self.racks, broker)

    def eligible_racks(self) -> frozenset[str]:
        """The racks of the eligible brokers (rack_key: a rackless broker is its own)."""
        cached = self._eligible_racks
        if cached is None or cached[0] is not self.eligible:
            cached = self._eligible_racks = (
                self.eligible,
                frozenset(self.rack(b) for b in self.eligible),
            )
        return cached[1]

    def is_dead(self, broker: int) -> bool:
        return broker not in self.live

    def leader_of(self, partition: Partition | None) -> int | None:
        """The partition's leader now, if it is on a live broker (a dead one leads nothing)."""
        leader = partition.current_leader if partition is not None else None
        return leader if leader is not None and leader in self.live else None

    def rank(self, broker: int) -> int:
        return self.tiebreak.get(broker, len(self.tiebreak) + broker)

    def account(self, topic: str, replicas: Sequence[int], size: int, sign: int) -> None:
        """Add (sign=+1) or remove (sign=-1) one partition's replicas from the counts."""
        self._count(topic, replicas, size, sign)
        self._refresh(topic, replicas, replicas[:1])

    def replace(self, topic: str, old: Sequence[int], new: Sequence[int], size: int | None) -> None:
        self._count(topic, old, size or 0, -1)
        self._count(topic, new, size or 0, +1)
        if self._replica_order is not None or self._leader_order is not None:
            self._refresh(topic, {*old, *new}, [*old[:1], *new[:1]])

    def add_replica(
        self, topic: str, replicas: Sequence[int], broker: int, size: int | None
    ) -> None:
        """`replace(topic, replicas, [*replicas, broker], size)`, touching only what changes
        (the added broker's counts; the leader stays unless there was none)."""
        if not replicas:
            self.replace(topic, replicas, [broker], size)
            return
        self.topic_replicas[topic][broker] += 1
        self.cluster_replicas[broker] += 1
        self.cluster_bytes[broker] += size or 0
        if self._replica_order is not None or self._leader_order is not None:
            self._refresh(topic, (broker,), ())

    def _count(self, topic: str, replicas: Sequence[int], size: int, sign: int) -> None:
        tr = self.topic_replicas[topic]
        for b in replicas:
            tr[b] += sign
            self.cluster_replicas[b] += sign
            self.cluster_bytes[b] += sign * size
        if replicas:
            leader = replicas[0]
            self.topic_leaders[topic][leader] += sign
            self.topic_rack_leaders[topic][self.rack(leader)] += sign
            self.cluster_leaders[leader] += sign

    def _refresh(self, topic: str, brokers: Iterable[int], leaders: Sequence[int]) -> None:
        """Move the brokers whose counts changed to their new places in the load orders."""
        order = self._replica_order
        if order is not None:
            for b in brokers:
                order.update(self, b)
        by_leaders = self._leader_order
        if by_leaders is not None:
            for b in brokers:
                by_leaders.update(self, b)
            if by_leaders.topic == topic:
                for leader in leaders:
                    by_leaders.update_rack(self, self.rack(leader))

    def replica_order(self, topic: str) -> ReplicaOrder:
        """The eligible brokers in pick_new_replica's load order for `topic`."""
        order = self._replica_order
        if order is None or order.topic != topic:
            order = self._replica_order = ReplicaOrder(self, topic)
        return order

    def leader_order(self, topic: str) -> LeaderOrder:
        """The eligible brokers in pick_leader's order for `topic`."""
        order = self._leader_order
        if order is None or order.topic != topic:
            order = self._leader_order = LeaderOrder(self, topic)
        return order

    def load_key(self, topic: str, broker: int) -> tuple[int, int, int, int]:
        """Lower is less loaded: topic replicas, cluster replicas, bytes, tie-break."""
        return (
            self.topic_replicas[topic][broker],
            self.cluster_replicas[broker],
            self.cluster_bytes[broker] if self.use_bytes else 0,
            self.rank(broker),
        )

    def fallback(self, topic: str, partition: int, reason: str) -> None:
        self.fallbacks.append(Fallback(topic, partition, reason))
