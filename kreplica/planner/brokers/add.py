"""add_brokers_plan: the new brokers' share by count or bytes, and no more."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.gcpause import gc_paused
from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.planner.brokers.run import (
    Key,
    Run,
    bytes_on,
    check_known,
    check_live,
    counts_on,
    movable_keys,
    need_sizes,
    smallest_sizes,
)
from kreplica.planner.loadindex import BrokerOrder, KeysByBroker
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound


@gc_paused()  # a million partitions are acyclic objects: see kreplica/gcpause.py
def add_brokers_plan(
    snapshot: ClusterSnapshot,
    brokers: Iterable[int],
    *,
    by: str = "count",
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """The fewest moves that bring the new `brokers` up to their share.

    share (count): T // L replicas, T the replicas on the L eligible brokers; the lower bound
    is the new brokers' deficit. share (bytes): total bytes // L; a move never takes a new
    broker past its share, so every byte moved is one the new brokers need.
    each move: the new broker furthest below its share takes a replica from the most loaded
    old broker (count: most replicas, bytes: most bytes) of a partition it is not in, without
    losing a rack; prefer a topic the source holds more of than the new broker, then (count)
    the smallest partition or (bytes) the largest that still fits, then a follower
    """
    new = frozenset(brokers)
    if not new:
        raise UsageError("`brokers`: no new broker given; give ids like 6 or 6,7")
    check_known("`brokers`", new, snapshot)
    check_live("`brokers`", new, snapshot)
    need_sizes(snapshot, by)
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b not in options.exclude_brokers or b in new)
    old = [b for b in eligible if b not in new]
    if not old:
        raise PlanInfeasible("every eligible broker is new: there is nothing to move from")
    run = Run.start(snapshot, eligible, options, None)
    ctx = run.ctx
    keys = run.in_flight(sorted(run.parts), options)
    keys = movable_keys(run, keys)
    sign = 1 if by == "count" else -1  # count: smallest first; bytes: largest first

    def weight(k: Key) -> int:
        return sign * (run.parts[k].size_bytes or 0)

    held = KeysByBroker(run.work, keys, weight)
    if by == "count":
        counts = counts_on(run, eligible)
        share = sum(counts.values()) // len(eligible)
        deficit = {n: max(0, share - counts[n]) for n in new}
        load: Callable[[int], int] = lambda b: ctx.cluster_replicas[b]  # noqa: E731
    else:
        sizes = bytes_on(run, eligible)
        share = sum(sizes.values()) // len(eligible)
        deficit = {n: max(0, share - sizes[n]) for n in new}
        load = lambda b: ctx.cluster_bytes[b]  # noqa: E731
    sources = BrokerOrder(old, lambda b: (-load(b), ctx.rank(b)))
    wanted = dict(deficit)
    moves: list[tuple[Key, int, int]] = []
    blocked: set[int] = set()
    hungriest = BrokerOrder(new, lambda b: (-wanted[b], ctx.rank(b)))
    while True:
        n = next((b for b in hungriest.brokers() if wanted[b] > 0 and b not in blocked), None)
        if n is None:
            break
        found = _add_one(run, n, sources, held, load, by, wanted[n], share)
        if found is None:
            blocked.add(n)
            continue
        key, src = found
        size = run.parts[key].size_bytes or 0
        run.move(key, src, n)
        held.move(key, src, n)
        sources.update(src)
        wanted[n] -= 1 if by == "count" else size
        hungriest.update(n)
        moves.append((key, src, n))
    sizes_moved = [run.parts[k].size_bytes for k, _, _ in moves]
    if by == "count":
        lb_moves = sum(deficit.values())
        old_sizes = [run.parts[k].size_bytes for b in old for k in held.keys(b)]
        lb_bytes = smallest_sizes(old_sizes + sizes_moved, lb_moves)
    else:
        gained = sum(s or 0 for s in sizes_moved)
        biggest = max((run.parts[k].size_bytes or 0 for k in keys), default=0)
        lb_moves = -(-gained // biggest) if biggest else 0
        lb_bytes = gained
    run.bound = LowerBound(lb_moves, lb_moves, lb_bytes)
    short = {n: w for n, w in wanted.items() if w > 0 and (by == "count" or n in blocked)}
    if short:
        unit = "replica(s)" if by == "count" else "bytes"
        run.findings.append(
            Finding(
                "warning",
                "share-not-reached",
                "no move without losing a rack (or a replica twice on a broker) is left for "
                + ", ".join(f"broker {n} ({w} {unit} short)" for n, w in sorted(short.items()))
                + "; racks limit where replicas may go",
            )
        )
    return run.plan(
        "add-brokers",
        {
            "new_brokers": sorted(new),
            "by": by,
            "share": share,
            "new_broker_deficit": dict(sorted(deficit.items())),
            "lower_bound_moves": lb_moves,
        },
    )


def _add_one(
    run: Run,
    n: int,
    sources: BrokerOrder,
    held_by: KeysByBroker,
    load: Callable[[int], int],
    by: str,
    room: int,
    share: int,
) -> tuple[Key, int] | None:
    """The next replica for new broker `n`: from the most loaded old broker that has one.

    The best of a source by (the topic's spread would not get better, size (count: smallest,
    bytes: largest that fits), n's minus the source's replicas of the topic, followers first,
    key): its partitions are held in size order, so the walk stops at the end of the first
    size that has a candidate whose topic gets better; only when none does is every one read
    (each rank is computed in full, so the order within a size does not matter).
    """
    topics = run.ctx.topic_replicas
    parts = run.parts
    sign = 1 if by == "count" else -1
    for src in sources.brokers():
        if by == "bytes" and load(src) <= share:
            break  # never take a broker below its share
        held = held_by.keys(src)
        # bytes: skip the partitions larger than the room left (they start at -size)
        i = bisect_left(held, (-room,), key=held_by.order) if by == "bytes" else 0
        best: tuple[tuple[bool, int, int, bool, Key], Key] | None = None
        for j in range(i, len(held)):
            key = held[j]
            size = parts[key].size_bytes or 0
            if best is not None and not best[0][0] and sign * size != best[0][1]:
                break  # past the size of the best candidate whose topic gets better
            reps = run.work[key]
            if n in reps or not run.rack_ok(key, src, n) or not run.fits(key, n):
                continue
            if by == "bytes" and not 0 < size <= room:
                continue
            topic = topics[key[0]]
            rank = (topic[src] <= topic[n], sign * size, topic[n] - topic[src], reps[0] == src, key)
            if best is None or rank < best[0]:
                best = (rank, key)
        if best is not None:
            return best[1], src
    return None
