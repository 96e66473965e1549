"""Which broker wins: the load-based choices every strategy shares.

Strategies decide *what* changes (how many replicas, which partition); pickers decide *where*.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kreplica.errors import PlanInfeasible
from kreplica.planner.context import PlanContext


def pick_new_replica(ctx: PlanContext, topic: str, replicas: Sequence[int]) -> int:
    """The least-loaded eligible broker outside `replicas`, on a rack they do not use yet
    when one is available.

        candidates = eligible - replicas
        prefer those whose rack is not used by replicas
        return argmin(topic replicas, cluster replicas, cluster bytes,
                      ring distance after the last replica)
    """
    used = set(replicas)
    used_racks = {ctx.rack(b) for b in replicas}
    topic_load = ctx.topic_replicas[topic]
    cluster_load = ctx.cluster_replicas
    cluster_bytes = ctx.cluster_bytes if ctx.use_bytes else None
    positions = ctx.tiebreak  # every eligible broker has a position and a rack key
    rack_keys = ctx.rack_keys
    ring = len(positions)
    # A replica on a broker the snapshot does not list has no ring position: plain tie-break.
    last_position = positions.get(replicas[-1]) if replicas else None
    best: int | None = None
    best_key: tuple[bool, int, int, int, int] | None = None
    # One pass (this is the planner's hot loop): fresh racks first, then load, then the
    # ring distance after the last replica, so ties spread partitions the way Kafka's
    # round-robin does.
    for b in ctx.eligible:
        if b in used:
            continue
        position = positions[b]
        key = (
            rack_keys[b] in used_racks,
            topic_load[b],
            cluster_load[b],
            cluster_bytes[b] if cluster_bytes is not None else 0,
            (position - last_position) % ring if last_position is not None else position,
        )
        if best_key is None or key < best_key:
            best, best_key = b, key
    if best is None:
        raise PlanInfeasible(
            f"topic {topic!r}: no eligible broker left for another replica of {list(replicas)}; "
            "add brokers with --brokers or lower the RF"
        )
    return best


def pick_leader(ctx: PlanContext, topic: str) -> int:
    """The leader of a new partition: fewest topic leaders, then leaders on its rack (so
    leaders rotate across racks), then topic/cluster load, then tie-break."""
    return min(
        ctx.eligible,
        key=lambda b: (
            ctx.topic_leaders[topic][b],
            ctx.topic_rack_leaders[topic][ctx.rack(b)],
            ctx.topic_replicas[topic][b],
            ctx.cluster_leaders[b],
            *ctx.load_key(topic, b)[1:],
        ),
    )


def pick_removal(
    ctx: PlanContext,
    topic: str,
    replicas: Sequence[int],
    *,
    out_of_sync: Collection[int],
    leader: int | None,
) -> int:
    """The replica to drop when lowering RF (no data moves).

    candidates: every replica but the current leader (which is never removed)
    prefer: on a dead broker, then out of sync (even over rack diversity: an in-sync copy
            on a shared rack is worth more than a lagging one; --fix-racks repairs the
            rack), then on an ineligible broker, then a follower over the preferred leader,
            then on a rack another replica also uses, then the most loaded (topic, cluster,
            bytes), then nearest the tail
    So a partition keeps as many live in-sync replicas as the new RF allows.
    """
    candidates = [b for b in replicas if b != leader] or list(replicas)
    rack_use: dict[str, int] = {}
    for b in replicas:
        rack_use[ctx.rack(b)] = rack_use.get(ctx.rack(b), 0) + 1
    eligible = set(ctx.eligible)
    position = {b: i for i, b in enumerate(replicas)}

    def key(b: int) -> tuple[bool, bool, bool, bool, bool, int, int, int, int]:
        load = ctx.load_key(topic, b)
        return (
            ctx.is_dead(b),
            b in out_of_sync,
            b not in eligible,
            position[b] > 0,
            rack_use[ctx.rack(b)] > 1,
            load[0],
            load[1],
            load[2],
            position[b],
        )

    return max(candidates, key=key)


def pick_rack_move_source(
    ctx: PlanContext,
    topic: str,
    replicas: Sequence[int],
    *,
    prefer: Collection[int],
    protected: Collection[int] = (),
) -> int | None:
    """The replica to move in rack repair: one sharing its rack with another replica.

    candidates, first non-empty of: followers that are not `protected` (the current
    leader); then the first replica if it is not protected (it is not leading now, so
    only the preferred leader changes); then any follower
    prefer: `prefer` (replicas this plan just added, which hold no data yet), then
    ineligible, then most loaded
    """
    rack_use: dict[str, int] = {}
    for b in replicas:
        rack_use[ctx.rack(b)] = rack_use.get(ctx.rack(b), 0) + 1
    eligible = set(ctx.eligible)
    shared = [b for b in replicas if rack_use[ctx.rack(b)] > 1]
    candidates = (
        [b for b in shared if b != replicas[0] and b not in protected]
        or [b for b in shared if b not in protected]
        or [b for b in shared if b != replicas[0]]
    )
    if not candidates:
        return None

    def key(b: int) -> tuple[bool, bool, int, int, int, int]:
        load = ctx.load_key(topic, b)
        return (b in prefer, b not in eligible, load[0], load[1], load[2], -load[3])

    return max(candidates, key=key)
