"""The add planner as it was at 6f36dc9 (a full scan per move), frozen: the oracle the
fast one must match plan for plan (test_broker_ops_oracle.py).

add_brokers_plan: the new brokers' share by count or bytes, and no more."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from kreplica.errors import PlanInfeasible, UsageError
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
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound


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
    by_broker: dict[int, list[Key]] = {b: [] for b in eligible}
    for k in keys:
        for b in run.work[k]:
            if b in by_broker:
                by_broker[b].append(k)
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
    wanted = dict(deficit)
    moves: list[tuple[Key, int, int]] = []
    blocked: set[int] = set()
    while True:
        hungry = [n for n in sorted(new) if wanted[n] > 0 and n not in blocked]
        if not hungry:
            break
        n = max(hungry, key=lambda b: (wanted[b], -ctx.rank(b)))
        found = _add_one(run, n, old, by_broker, load, by, wanted[n], share)
        if found is None:
            blocked.add(n)
            continue
        key, src = found
        size = run.parts[key].size_bytes or 0
        run.move(key, src, n)
        by_broker[src].remove(key)
        by_broker[n].append(key)
        wanted[n] -= 1 if by == "count" else size
        moves.append((key, src, n))
    sizes_moved = [run.parts[k].size_bytes for k, _, _ in moves]
    if by == "count":
        lb_moves = sum(deficit.values())
        old_sizes = [run.parts[k].size_bytes for b in old for k in by_broker[b]]
        old_sizes += sizes_moved
        lb_bytes = smallest_sizes(old_sizes, lb_moves)
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
    old: Sequence[int],
    by_broker: dict[int, list[Key]],
    load: Callable[[int], int],
    by: str,
    room: int,
    share: int,
) -> tuple[Key, int] | None:
    """The next replica for new broker `n`: from the most loaded old broker that has one."""
    ctx = run.ctx
    for src in sorted(old, key=lambda b: (-load(b), ctx.rank(b))):
        if by == "bytes" and load(src) <= share:
            break  # never take a broker below its share
        best: tuple[tuple[bool, int, int, bool, Key], Key] | None = None
        for key in by_broker[src]:
            reps = run.work[key]
            if n in reps or not run.rack_ok(key, src, n) or not run.fits(key, n):
                continue
            size = run.parts[key].size_bytes or 0
            if by == "bytes" and not 0 < size <= room:
                continue
            topic = ctx.topic_replicas[key[0]]
            rank = (
                topic[src] <= topic[n],  # the topic's spread would not get better
                size if by == "count" else -size,
                topic[n] - topic[src],
                reps[0] == src,  # followers first: no leadership moves
                key,
            )
            if best is None or rank < best[0]:
                best = (rank, key)
        if best is not None:
            return best[1], src
    return None
