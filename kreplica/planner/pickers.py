"""Which broker wins: the load-based choices every strategy shares.

Strategies decide *what* changes (how many replicas, which partition); pickers decide *where*.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable, Sequence
from itertools import chain

from kreplica.errors import PlanInfeasible
from kreplica.planner.context import PlanContext


def pick_new_replica(
    ctx: PlanContext, topic: str, replicas: Sequence[int], size_bytes: int | None = None
) -> int:
    """The least-loaded eligible broker outside `replicas`, on a rack they do not use yet
    when one is available, where a replica of `size_bytes` fits on disk (ctx.disk).

        candidates = eligible - replicas
        prefer those whose rack is not used by replicas
        return argmin(topic replicas, cluster replicas, cluster bytes,
                      ring distance after the last replica)

    The brokers are kept in that load order (ctx.replica_order), brokers of equal load in
    ring order, so a pick walks from the front and stops at the first fresh-rack candidate
    (the first candidate at all when no fresh rack is left): O(log brokers) for the ring
    bisect plus the brokers skipped, not a scan of every broker.
    """
    order = ctx.replica_order(topic)
    entries = order.entries
    used_racks = {ctx.rack(b) for b in replicas}
    rack_keys = ctx.rack_keys
    # A broker on a rack no replica uses exists unless the partition covers every rack.
    fresh_left = not used_racks.issuperset(order.racks)
    disk = ctx.disk
    # A replica on a broker the snapshot does not list has no ring position: plain tie-break.
    last_position = ctx.tiebreak.get(replicas[-1]) if replicas else None
    ring = order.ring
    fallback: int | None = None
    n = len(entries)
    i = 0
    while i < n:
        # one group of equal load [i, j), in ring order; start after the last replica's position
        head = entries[i]
        t, c, by = head[0], head[1], head[2]
        after = entries[i + 1] if i + 1 < n else None
        walk: Iterable[int]
        if after is None or after[0] != t or after[1] != c or after[2] != by:
            j, walk = i + 1, (i,)  # a group of one (usual once cluster loads differ)
        else:
            j = bisect_left(entries, (t, c, by, ring), i + 1)
            start = (
                i
                if last_position is None
                else bisect_left(entries, (t, c, by, last_position + 1), i, j)
            )
            walk = chain(range(start, j), range(i, start))
        for k in walk:
            b = entries[k][4]
            if b in replicas:
                continue
            if disk is not None and not disk.fits(b, size_bytes):
                continue
            if fresh_left and rack_keys[b] in used_racks:
                if fallback is None:
                    fallback = b
                continue
            if disk is not None:
                disk.take(b, size_bytes)
            return b
        i = j
    if fallback is not None:
        if disk is not None:
            disk.take(fallback, size_bytes)
        return fallback
    if disk is not None:
        used = set(replicas)
        full = next((b for b in ctx.eligible if b not in used), None)
        if full is not None:
            raise PlanInfeasible(disk.refusal(full, size_bytes))
    raise PlanInfeasible(
        f"topic {topic!r}: no eligible broker left for another replica of {list(replicas)}; "
        "add brokers with `brokers` or lower the RF"
    )


def pick_leader(ctx: PlanContext, topic: str) -> int:
    """The leader of a new partition: fewest topic leaders, then leaders on its rack (so
    leaders rotate across racks), then topic/cluster load, then tie-break.

        argmin over eligible of (topic leaders, topic leaders on its rack, topic replicas,
                                 cluster leaders, cluster replicas, cluster bytes, rank)

    read from the front of ctx.leader_order (kept in that order as replicas are placed)."""
    best = ctx.leader_order(topic).best()
    if best is None:
        raise ValueError("min() arg is an empty sequence")  # as the scan it replaces did
    return best


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
    eligible = ctx.eligible_set
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
    eligible = ctx.eligible_set
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
