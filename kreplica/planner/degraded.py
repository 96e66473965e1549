"""Planning on a cluster that is not healthy: replicas on dead brokers, moves in flight.

Kafka rejects a reassignment that names a broker it does not know as live ("Unknown broker
id"), and one for a partition that is being reassigned already. So before any strategy runs:

    in flight = partitions of the requested topics with adding/removing replicas
        refused (ReassignmentInProgress, exit 6) unless skip_in_flight, which leaves them out
    for each partition the request changes (RF differs, or rack repair needed):
        dead = its replicas on brokers that are not live
        surviving = len(dead) - replicas lowering RF removes (dead ones go first)
        surviving > 0: refused (PlanInfeasible, exit 4) unless replace_dead, which swaps
                       that many dead replicas for live brokers, position kept
After planning, no target replica list may name a dead broker (checked again, as a guard).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from kreplica.errors import PlanInfeasible, ReassignmentInProgress
from kreplica.model import Finding, Partition, PartitionChange, Topic
from kreplica.planner.context import PlanContext
from kreplica.planner.options import TopicRequest
from kreplica.planner.pickers import pick_new_replica
from kreplica.planner.strategies import keep_leader_first, rack_target


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(map(str, ids))


def _by_topic(keys: Iterable[tuple[str, int]], most: int = 8) -> str:
    grouped: dict[str, list[int]] = {}
    for topic, pid in sorted(keys):
        grouped.setdefault(topic, []).append(pid)
    shown = []
    for topic, pids in grouped.items():
        more = f", ... ({len(pids)} in all)" if len(pids) > most else ""
        shown.append(f"{topic}: {_ids(pids[:most])}{more}")
    return "; ".join(shown)


def needs_change(ctx: PlanContext, part: Partition, req: TopicRequest) -> bool:
    """Whether the request changes this existing partition's replica list."""
    if req.rf is not None and len(part.replicas) != req.rf:
        return True
    if req.fix_racks:
        racks = len({ctx.rack(b) for b in part.replicas})
        return racks < rack_target(ctx, part.replicas, len(part.replicas))
    return False


def in_flight(topic: Topic) -> list[Partition]:
    return [p for p in topic.partitions if p.reassigning]


def refuse_in_flight(moving: Sequence[Partition]) -> ReassignmentInProgress:
    keys = [(p.topic, p.partition) for p in moving]
    return ReassignmentInProgress(
        f"{len(moving)} partition(s) are being reassigned ({_by_topic(keys)}); "
        "wait until `kafka-reassign-partitions --verify` reports them complete, or pass "
        "`skip_in_flight` to leave them out of this plan"
    )


def surviving_dead(ctx: PlanContext, part: Partition, rf: int) -> int:
    """Dead replicas left once lowering RF has removed what it can (dead ones go first)."""
    dead = sum(1 for b in part.replicas if ctx.is_dead(b))
    return max(0, dead - max(0, len(part.replicas) - rf))


def refuse_dead(ctx: PlanContext, blocked: Mapping[tuple[str, int], int]) -> PlanInfeasible:
    dead = sorted(
        {
            b
            for t in ctx.snapshot.topics
            for p in t.partitions
            if (t.name, p.partition) in blocked
            for b in p.replicas
            if ctx.is_dead(b)
        }
    )
    return PlanInfeasible(
        f"{len(blocked)} partition(s) to change have replicas on dead broker(s) {_ids(dead)} "
        f"({_by_topic(blocked)}) and Kafka rejects a plan naming them; pass `replace_dead` "
        "to put live brokers in their place (same rack where one is eligible), or bring the "
        "brokers back first"
    )


def replace_dead(
    ctx: PlanContext, topic: str, part: Partition, replicas: list[int], count: int
) -> None:
    """Swap the first `count` dead replicas for live eligible brokers, each in the dead one's
    position: the least-loaded eligible broker on the dead one's rack when its rack is known
    and has one, otherwise pick_new_replica (least loaded, on a rack the partition lacks).
    A dead preferred leader's place goes to the leader now, when there is one, so the new
    replica (not in sync yet) does not become the preferred leader."""
    original = list(replicas)
    for _ in range(count):
        dead = next(b for b in replicas if ctx.is_dead(b))
        rest = [b for b in replicas if b != dead]
        rack = ctx.racks.get(dead)
        same_rack = [
            b
            for b in ctx.eligible
            if rack is not None and ctx.racks.get(b) == rack and b not in rest
        ]
        if same_rack:
            chosen = min(same_rack, key=lambda b: ctx.load_key(topic, b))
        else:
            chosen = pick_new_replica(ctx, topic, rest, part.size_bytes)
        new = [chosen if b == dead else b for b in replicas]
        ctx.replace(topic, replicas, new, part.size_bytes)
        replicas[:] = new
    leading = keep_leader_first(original, list(replicas), ctx.leader_of(part))
    ctx.replace(topic, replicas, leading, part.size_bytes)
    replicas[:] = leading


def dead_in_targets(ctx: PlanContext, changes: Iterable[PartitionChange]) -> list[str]:
    """Target lists naming a dead broker: never allowed (Kafka rejects the whole file)."""
    return [
        f"{c.topic}-{c.partition} -> {list(c.after)}"
        for c in changes
        if c.changed and any(ctx.is_dead(b) for b in c.after)
    ]


def dead_broker_findings(ctx: PlanContext, topics: Sequence[Topic]) -> list[Finding]:
    """One line per dead broker the requested topics use: how many replicas it holds, and
    whether its rack is unknown (a dead ZooKeeper-mode broker's registration is gone)."""
    held: dict[int, int] = {}
    for topic in topics:
        for p in topic.partitions:
            for b in p.replicas:
                if ctx.is_dead(b):
                    held[b] = held.get(b, 0) + 1
    return [dead_broker_finding(b, ctx.racks.get(b), n) for b, n in sorted(held.items())]


def dead_broker_finding(broker: int, rack: str | None, count: int) -> Finding:
    where = f"rack {rack}" if rack is not None else "rack unknown: its registration is gone"
    return Finding(
        "warning",
        "dead-broker",
        f"broker {broker} is down ({where}); it holds {count} replica(s) of the "
        "requested topics, which stay out of sync until it returns",
    )


def lagging_finding(topic: str, lagging: Sequence[int], lowers: bool) -> Finding:
    """A topic's partitions with replicas out of sync or on a dead broker (ids in order)."""
    shown = _ids(lagging[:10]) + (", ..." if len(lagging) > 10 else "")
    what = (
        "lowering RF drops those first and never the leader"
        if lowers
        else "they stay out of sync until they catch up"
    )
    return Finding(
        "warning",
        "under-replicated",
        f"topic {topic!r}: {len(lagging)} partition(s) have replicas out of sync or on a "
        f"dead broker ({shown}); {what}, and new replicas copy from the leader",
        topic=topic,
    )
