"""Seed idea 1: continue the topic's own Kafka layout.

layout = infer_layout(topic)            # broker list, start index, shift (kreplica.kafka)
if every partition has one replica:     # the seed's RF=1 case: the shift is unconstrained,
    layout.replica_shift = seeded draw  #   Kafka would have drawn it at random
raise RF, conforming partition:  append Kafka's next replicas (Kafka's placement is
                                 prefix-stable, so the existing replicas stay as they are)
lower RF, conforming partition:  truncate the tail (what Kafka would have placed at that RF)
add partitions:                  Kafka's ZK add-partitions over the eligible brokers
anything else (no layout, nonconforming partition, Kafka's next replica ineligible or on a
rack the partition already uses while another is free, tail holding the current leader,
truncation losing a rack or keeping an out-of-sync/ineligible follower over a healthier
replica, add-partitions refused, e.g. for mixed racks): fall back to `balanced` for that
partition and record why
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

from kreplica.kafka import KafkaAssignmentError, KafkaLayout, add_partitions, infer_layout
from kreplica.model import Partition, Topic
from kreplica.planner.context import PlanContext
from kreplica.planner.strategies import (
    BalancedStrategy,
    Work,
    grow_balanced,
    partitions_by_id,
    shrink_balanced,
)


def topic_layout(ctx: PlanContext, topic: Topic) -> KafkaLayout | None:
    """The inferred layout, with the RF=1 shift drawn deterministically (seed and topic)."""
    assignment = topic.assignment()
    layout = infer_layout(assignment, ctx.snapshot.broker_ids(), ctx.racks)
    if layout is None:
        return None
    if all(len(reps) <= 1 for reps in assignment.values()) and len(layout.broker_list) > 1:
        draw = random.Random(f"{ctx.seed}:{topic.name}").randrange(len(layout.broker_list))
        layout = dataclasses.replace(layout, replica_shift=draw)
    return layout


def _tail_problem(ctx: PlanContext, replicas: Sequence[int], tail: Sequence[int]) -> str | None:
    eligible = set(ctx.eligible)
    used = list(replicas)
    for b in tail:
        if b not in eligible:
            return f"Kafka's next replica would be broker {b}, which is not eligible"
        if b in used:
            return f"Kafka's next replica would be broker {b}, which already holds one"
        used_racks = {ctx.rack(x) for x in used}
        if ctx.rack(b) in used_racks and any(
            ctx.rack(x) not in used_racks for x in ctx.eligible if x not in used
        ):
            return f"Kafka's next replica would be broker {b}, on a rack the partition uses"
        used.append(b)
    return None


def _kept_weaker_than_dropped(
    ctx: PlanContext,
    part: Partition | None,
    keep: Sequence[int],
    dropped: Sequence[int],
    leader: int | None,
) -> str | None:
    """Why truncating is worse than `balanced` lowering: it would keep a replica that is on a
    dead broker, out of sync or on an ineligible broker and drop a healthier one (that costs an
    in-sync copy, or keeps data on a broker being drained)."""
    lagging = set(part.out_of_sync) if part else set()
    eligible = set(ctx.eligible)

    def weakness(b: int) -> tuple[bool, bool, bool]:
        return (ctx.is_dead(b), b in lagging, b not in eligible)

    kept = [b for b in keep if b != leader]  # `balanced` keeps the leader too
    if not kept or not dropped:
        return None
    weakest = max(kept, key=weakness)
    healthiest = min(dropped, key=weakness)
    if weakness(weakest) <= weakness(healthiest):
        return None
    dead, out_of_sync, _ = weakness(weakest)
    why = "dead" if dead else "out of sync" if out_of_sync else "not eligible"
    return f"truncating would keep broker {weakest} ({why}) and drop broker {healthiest}"


class KafkaStrategy:
    name = "kafka"

    def change_rf(self, ctx: PlanContext, topic: Topic, work: Work, rf: int) -> None:
        layout = topic_layout(ctx, topic)
        partitions = partitions_by_id(topic)
        kafka: dict[int, list[int]] = {}
        if layout is not None:
            kafka = layout.extend(max(work) + 1 if work else 0, rf)
        conforming = set(layout.conforming) if layout is not None else set()
        for pid in sorted(work):
            replicas = work[pid]
            part = partitions.get(pid)
            size = part.size_bytes if part else None
            if len(replicas) == rf:
                continue
            if layout is None:
                reason = "no Kafka layout reproduces partition 0 of this topic"
            elif pid not in conforming:
                reason = "does not fit the inferred Kafka layout (added or changed by hand)"
            elif part is not None and tuple(replicas) != part.replicas:
                reason = "a replica on a dead broker was replaced"
            elif len(replicas) < rf:
                target = kafka.get(pid, [])
                if len(target) < rf:
                    reason = (
                        f"RF {rf} exceeds the {len(layout.broker_list)} brokers the topic's "
                        "Kafka layout spans"
                    )
                else:
                    tail = target[len(replicas) : rf]
                    problem = _tail_problem(ctx, replicas, tail)
                    if problem is None:
                        ctx.replace(topic.name, replicas, [*replicas, *tail], size)
                        replicas.extend(tail)
                        continue
                    reason = problem
            else:
                leader = ctx.leader_of(part)
                keep = replicas[:rf]
                weaker = _kept_weaker_than_dropped(ctx, part, keep, replicas[rf:], leader)
                if leader is not None and leader in replicas and leader not in keep:
                    reason = f"truncating would drop the current leader {leader}"
                elif len({ctx.rack(b) for b in keep}) < min(
                    rf, len({ctx.rack(b) for b in replicas})
                ):
                    reason = "truncating would leave two replicas on one rack"
                elif weaker is not None:
                    reason = weaker
                else:
                    ctx.replace(topic.name, replicas, keep, size)
                    replicas[:] = keep
                    continue
            ctx.fallback(topic.name, pid, reason)
            if len(replicas) < rf:
                grow_balanced(ctx, topic.name, replicas, rf, size)
            else:
                shrink_balanced(ctx, topic.name, part, replicas, rf)

    def add_partitions(
        self, ctx: PlanContext, topic: Topic, work: Work, total: int, rf: int
    ) -> None:
        current = len(work)
        racks = {b: ctx.racks.get(b) for b in ctx.eligible}
        try:
            placed = add_partitions(list(ctx.eligible), work, total, racks=racks, topic=topic.name)
        except KafkaAssignmentError as exc:
            reason = f"Kafka's add-partitions refuses: {exc}"
            placed = {}
        else:
            reason = ""
        if placed and all(len(placed.get(pid, [])) == rf for pid in range(current, total)):
            for pid in range(current, total):
                replicas = list(placed[pid])
                ctx.replace(topic.name, [], replicas, 0)
                work[pid] = replicas
            return
        reason = reason or f"Kafka's add-partitions would not give RF {rf}"
        for pid in range(current, total):
            ctx.fallback(topic.name, pid, reason)
        BalancedStrategy().add_partitions(ctx, topic, work, total, rf)
