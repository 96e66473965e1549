"""What changes: the three strategies for RF changes and new partitions, plus rack repair.

Each strategy works on one topic's working assignment (`work`: partition id -> replica list,
mutated in place) and reports every accepted partition change to the context so the load
counts stay current. Existing replicas are never moved or reordered by an RF change.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from kreplica.model import Partition, Topic
from kreplica.planner.context import PlanContext
from kreplica.planner.pickers import (
    pick_leader,
    pick_new_replica,
    pick_rack_move_source,
    pick_removal,
)

Work = dict[int, list[int]]


class Strategy(Protocol):
    name: str

    def change_rf(self, ctx: PlanContext, topic: Topic, work: Work, rf: int) -> None: ...

    def add_partitions(
        self, ctx: PlanContext, topic: Topic, work: Work, total: int, rf: int
    ) -> None: ...


def partitions_by_id(topic: Topic) -> dict[int, Partition]:
    return {p.partition: p for p in topic.partitions}


def grow_balanced(
    ctx: PlanContext, topic: str, replicas: list[int], rf: int, size: int | None
) -> None:
    """Append least-loaded replicas (fresh racks first) until `replicas` has `rf`."""
    while len(replicas) < rf:
        chosen = pick_new_replica(ctx, topic, replicas, size)
        ctx.add_replica(topic, replicas, chosen, size)
        replicas.append(chosen)


def keep_leader_first(original: Sequence[int], kept: list[int], leader: int | None) -> list[int]:
    """When lowering RF drops the preferred leader (first replica), put the current leader
    first instead, so the preferred leader is the one leading now and leadership stays put."""
    if original and kept and original[0] not in kept and leader in kept and kept[0] != leader:
        return [leader, *(b for b in kept if b != leader)]
    return kept


def shrink_balanced(
    ctx: PlanContext,
    topic: str,
    partition: Partition | None,
    replicas: list[int],
    rf: int,
) -> None:
    """Drop replicas (dead first, then out of sync, then the most loaded; never the current
    leader) until `replicas` has `rf`; the survivors keep their order, except that the current
    leader goes first when the preferred leader was dropped."""
    size = partition.size_bytes if partition else None
    out_of_sync = partition.out_of_sync if partition else ()
    leader = ctx.leader_of(partition)
    original = list(replicas)
    while len(replicas) > rf:
        victim = pick_removal(ctx, topic, replicas, out_of_sync=out_of_sync, leader=leader)
        replicas[:] = [b for b in replicas if b != victim]
    replicas[:] = keep_leader_first(original, replicas, leader)
    ctx.replace(topic, original, replicas, size)


def rack_target(ctx: PlanContext, replicas: Sequence[int], rf: int) -> int:
    """Racks a partition of `rf` replicas can span: those of the eligible brokers and of
    its current replicas (which stay where they are), at most `rf`."""
    eligible = ctx.eligible_racks()
    extra = {r for r in map(ctx.rack, replicas) if r not in eligible}
    return min(rf, len(eligible) + len(extra))


def repair_racks(
    ctx: PlanContext,
    topic: str,
    partition: Partition | None,
    replicas: list[int],
    *,
    added: Collection[int] = (),
) -> None:
    """Make `replicas` span rack_target() racks with the fewest replacements.

        while racks(replicas) < rack_target(replicas):
            move a replica off a shared rack (pick_rack_move_source: newly added ones first,
            never the current leader while another can go) to the least-loaded eligible
            broker on a rack not used yet, same position
    Each move adds exactly one rack, so the number of moves is target - racks now: minimal.
    """
    size = partition.size_bytes if partition else None
    leader = ctx.leader_of(partition)
    protected = {leader} if leader is not None else set()
    target = rack_target(ctx, replicas, len(replicas))
    for _ in range(len(replicas)):  # each move gains a rack: never more moves than replicas
        if len({ctx.rack(b) for b in replicas}) >= target:
            break
        source = pick_rack_move_source(ctx, topic, replicas, prefer=added, protected=protected)
        if source is None:
            break
        rest = [b for b in replicas if b != source]
        used_racks = {ctx.rack(b) for b in rest}
        fresh = [
            b
            for b in ctx.eligible
            if b not in rest and b != source and ctx.rack(b) not in used_racks
        ]
        if not fresh:
            break
        dest = min(fresh, key=lambda b: ctx.load_key(topic, b))
        new = [dest if b == source else b for b in replicas]
        ctx.replace(topic, replicas, new, size)
        replicas[:] = new


class BalancedStrategy:
    """Default: least-loaded placement with rack diversity.

        raise RF:  for each partition, append pick_new_replica() until RF is reached
        lower RF:  for each partition, drop pick_removal() until RF is reached
        add partitions: leader = pick_leader() (rotates over brokers and racks),
                        followers = pick_new_replica()
    Loads: topic replica count, then cluster replica count, then bytes (when known). Ties go
    to the broker next after the partition's last replica in broker-id order (or a --seed
    permutation); a new partition's leader ties by that order alone.
    """

    name = "balanced"

    def change_rf(self, ctx: PlanContext, topic: Topic, work: Work, rf: int) -> None:
        partitions = partitions_by_id(topic)
        for pid in sorted(work):
            replicas = work[pid]
            part = partitions.get(pid)
            if len(replicas) < rf:
                grow_balanced(ctx, topic.name, replicas, rf, part.size_bytes if part else None)
            elif len(replicas) > rf:
                shrink_balanced(ctx, topic.name, part, replicas, rf)

    def add_partitions(
        self, ctx: PlanContext, topic: Topic, work: Work, total: int, rf: int
    ) -> None:
        for pid in range(len(work), total):
            leader = pick_leader(ctx, topic.name)
            ctx.replace(topic.name, [], [leader], 0)
            replicas = [leader]
            grow_balanced(ctx, topic.name, replicas, rf, 0)
            work[pid] = replicas


def _ring_after(ring: Sequence[int], start: int) -> list[int]:
    """The ring's brokers in order after `start` (wrapping), `start` itself last."""
    if start in ring:
        i = ring.index(start)
        return [*ring[i + 1 :], *ring[: i + 1]]
    after = [b for b in ring if b > start]
    return [*after, *(b for b in ring if b <= start)]


def next_in_ring(ctx: PlanContext, ring: Sequence[int], replicas: Sequence[int]) -> int | None:
    """The first eligible broker after the last replica in the id-sorted ring that is not a
    replica yet, on an unused rack when one is available."""
    used = set(replicas)
    used_racks = {ctx.rack(b) for b in replicas}
    eligible = set(ctx.eligible)
    order = [b for b in _ring_after(ring, replicas[-1]) if b in eligible and b not in used]
    for b in order:
        if ctx.rack(b) not in used_racks:
            return b
    return order[0] if order else None


def truncate_keeping_racks(
    ctx: PlanContext,
    replicas: Sequence[int],
    rf: int,
    leader: int | None,
    out_of_sync: Collection[int] = (),
) -> list[int]:
    """Drop replicas from the tail until `rf` remain, never the current leader. As for
    `balanced`, replicas on dead brokers go first, then out-of-sync ones, then those on
    ineligible brokers, and the first replica only when one of those; among the rest a replica
    that is its rack's only one is skipped while a replica sharing its rack can go instead.
    The current leader goes first when the first replica was dropped."""
    eligible = set(ctx.eligible)
    kept = list(replicas)
    while len(kept) > rf:
        droppable = [b for b in kept if b != leader] or kept[1:]
        racks = [ctx.rack(b) for b in kept]
        ranked = [
            (
                ctx.is_dead(b),
                b in out_of_sync,
                b not in eligible,
                kept.index(b) > 0,
                racks.count(ctx.rack(b)) > 1,
                kept.index(b),
                b,
            )
            for b in droppable
        ]
        kept.remove(max(ranked)[-1])
    return keep_leader_first(replicas, kept, leader)


class AppendStrategy:
    """Seed idea 2: extend each partition from its last replica along the id-sorted ring.

    ring = all broker ids, sorted
    raise RF: new replica = next eligible broker after the last replica in the ring that
              is not in the partition, skipping to one on an unused rack if any exists
    lower RF: truncate the tail (the current leader is kept; out-of-sync replicas, then
              those on ineligible brokers, go first)
    add partitions: leader = next eligible broker after the previous partition's leader,
                    followers appended as above
    """

    name = "append"

    def _ring(self, ctx: PlanContext, work: Work) -> list[int]:
        brokers = set(ctx.snapshot.broker_ids()) | set(ctx.eligible)
        for reps in work.values():
            brokers.update(reps)
        return sorted(brokers)

    def _grow(
        self,
        ctx: PlanContext,
        ring: Sequence[int],
        topic: str,
        replicas: list[int],
        rf: int,
        size: int | None,
    ) -> None:
        while len(replicas) < rf:
            chosen = next_in_ring(ctx, ring, replicas)
            if chosen is None:  # only when the ring is exhausted; reuse the picker's message
                chosen = pick_new_replica(ctx, topic, replicas, size)
            ctx.add_replica(topic, replicas, chosen, size)
            replicas.append(chosen)

    def change_rf(self, ctx: PlanContext, topic: Topic, work: Work, rf: int) -> None:
        ring = self._ring(ctx, work)
        partitions = partitions_by_id(topic)
        for pid in sorted(work):
            replicas = work[pid]
            part = partitions.get(pid)
            size = part.size_bytes if part else None
            if len(replicas) < rf:
                self._grow(ctx, ring, topic.name, replicas, rf, size)
            elif len(replicas) > rf:
                lagging = part.out_of_sync if part else ()
                keep = truncate_keeping_racks(ctx, replicas, rf, ctx.leader_of(part), lagging)
                ctx.replace(topic.name, replicas, keep, size)
                replicas[:] = keep

    def add_partitions(
        self, ctx: PlanContext, topic: Topic, work: Work, total: int, rf: int
    ) -> None:
        ring = self._ring(ctx, work)
        eligible = set(ctx.eligible)
        for pid in range(len(work), total):
            previous = work[pid - 1][0] if pid > 0 and work.get(pid - 1) else ring[-1]
            leader = next(b for b in _ring_after(ring, previous) if b in eligible)
            ctx.replace(topic.name, [], [leader], 0)
            replicas = [leader]
            self._grow(ctx, ring, topic.name, replicas, rf, 0)
            work[pid] = replicas
