"""add_brokers_plan: the new brokers' share by count or bytes, and no more.

Two engines, one greedy: on a ColumnarSnapshot the column run (column_run.py, `columns`:
each broker's partitions held as sorted arrays, loads as numpy counts), else the object
run (run.py, `objects`); the report's `engine` says which and why. Both take the same move
at every step, so they give the same plan (test_add_columns.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.gcpause import gc_paused
from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.planner.brokers.dispatch import by_traffic_when_rated, pick_engine
from kreplica.planner.brokers.run import (
    Key,
    Run,
    bytes_on,
    check_known,
    check_live,
    counts_on,
    eligible_live,
    movable_keys,
    need_sizes,
    smallest_sizes,
)
from kreplica.planner.loadindex import BrokerOrder, KeysByBroker, RowsByBroker
from kreplica.planner.options import PlanOptions
from kreplica.planner.plan import with_engine
from kreplica.planner.report import LowerBound

if TYPE_CHECKING:
    from kreplica.planner.brokers.column_run import ColumnRun


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
    eligible = eligible_live(snapshot, options, keep=new)
    old = [b for b in eligible if b not in new]
    if not old:
        raise PlanInfeasible("every eligible broker is new: there is nothing to move from")
    engine, why = pick_engine(snapshot, options, "add-brokers")
    make = _add_on_columns if engine == "columns" else _add_on_objects
    return with_engine(make(snapshot, new, eligible, old, by, options), engine, why)


def _add_on_objects(
    snapshot: ClusterSnapshot,
    new: frozenset[int],
    eligible: list[int],
    old: list[int],
    by: str,
    options: PlanOptions,
) -> Plan:
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
    moves: list[tuple[Key, int, int]] = []

    def take(n: int, room: int) -> int | None:
        found = _add_one(run, n, sources, held, load, by, room, share)
        if found is None:
            return None
        key, src = found
        run.move(key, src, n)
        held.move(key, src, n)
        sources.update(src)
        moves.append((key, src, n))
        return 1 if by == "count" else run.parts[key].size_bytes or 0

    wanted, blocked = _fill(new, deficit, ctx.rank, take)
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
    return _finish(run, by, share, deficit, wanted, blocked, lb_moves, lb_bytes)


def _fill(
    new: Iterable[int],
    deficit: dict[int, int],
    rank: Callable[[int], int],
    take: Callable[[int, int], int | None],
) -> tuple[dict[int, int], set[int]]:
    """The greedy both runs share: the new broker furthest below its share (then by rank)
    takes its next replica, until every one has its share or none is left for it.
    `take(n, room)` makes n's next move and returns what it filled (1, or its bytes), None
    when there is none. Returns what each still wants and the brokers left short."""
    wanted = dict(deficit)
    blocked: set[int] = set()
    hungriest = BrokerOrder(new, lambda b: (-wanted[b], rank(b)))
    while True:
        n = next((b for b in hungriest.brokers() if wanted[b] > 0 and b not in blocked), None)
        if n is None:
            return wanted, blocked
        filled = take(n, wanted[n])
        if filled is None:
            blocked.add(n)
            continue
        wanted[n] -= filled
        hungriest.update(n)


def _finish(
    run: Run | ColumnRun,
    by: str,
    share: int,
    deficit: dict[int, int],
    wanted: dict[int, int],
    blocked: set[int],
    lb_moves: int,
    lb_bytes: int | None,
) -> Plan:
    """The plan of either run: its bound, the share-not-reached warning, the report's keys
    (deficit, wanted and blocked by broker id)."""
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
            **by_traffic_when_rated(run, "add-brokers", replace=True),
            "new_brokers": sorted(deficit),
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
        i = held_by.first_at(src, -room) if by == "bytes" else 0
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


def _add_on_columns(
    snapshot: ClusterSnapshot,
    new_ids: frozenset[int],
    eligible: list[int],
    old_ids: list[int],
    by: str,
    options: PlanOptions,
) -> Plan:
    """_add_on_objects on the column run: the same greedy, brokers as dense indexes, rows
    for keys (the columns' row order is the key order)."""
    import numpy as np

    from kreplica.columns import NO_SIZE
    from kreplica.planner.brokers.column_run import ColumnRun

    run = ColumnRun.start(snapshot, eligible, options, None)
    rows = run.in_flight(run.scope_rows())
    rows = rows[run.movable(rows)]
    count = by == "count"
    loads = run.replicas if count else run.bytes
    new = run.to_dense(np.array(sorted(new_ids))).tolist()
    old = run.to_dense(np.array(old_ids)).tolist()
    share = int(loads[run.to_dense(np.array(eligible))].sum()) // len(eligible)
    deficit = {n: max(0, share - int(loads[n])) for n in new}
    is_old = np.zeros(run.nb, dtype=bool)
    is_old[old] = True
    held = RowsByBroker(run.work, rows, run.size if count else -run.size, is_old)
    rank = run.rank.tolist()
    sources = BrokerOrder(old, lambda b: (-int(loads[b]), rank[b]))
    moved: list[int] = []  # sizes

    def take(n: int, room: int) -> int | None:
        found = _add_one_on_columns(run, n, sources, held, loads, count, room, share)
        if found is None:
            return None
        row, slot, src = found
        size = int(run.size[row])
        run.move_one(row, slot, n)
        held.drop(src, row)
        sources.update(src)
        moved.append(size)
        return 1 if count else size

    wanted, blocked = _fill(new, deficit, rank.__getitem__, take)
    raw = run.columns.size
    if count:
        lb_moves = sum(deficit.values())
        reps = run.dense[rows]
        on_old = (reps >= 0) & is_old[np.maximum(reps, 0)]
        sizes = np.broadcast_to(raw[rows][:, None], reps.shape)[on_old]
        lb_bytes: int | None = None
        if not bool((sizes == NO_SIZE).any()):
            k = min(lb_moves, len(sizes))
            lb_bytes = int(np.partition(sizes, k - 1)[:k].sum()) if k else 0
    else:
        gained = sum(moved)
        biggest = int(run.size[rows].max(initial=0))
        lb_moves = -(-gained // biggest) if biggest else 0
        lb_bytes = gained
    ids = run.ids.tolist()
    return _finish(
        run,
        by,
        share,
        {ids[n]: d for n, d in deficit.items()},
        {ids[n]: w for n, w in wanted.items()},
        {ids[n] for n in blocked},
        lb_moves,
        lb_bytes,
    )


def _add_one_on_columns(
    run: ColumnRun,
    n: int,
    sources: BrokerOrder,
    held_by: RowsByBroker,
    loads: Any,
    count: bool,
    room: int,
    share: int,
) -> tuple[int, int, int] | None:
    """_add_one on the column run: (row, slot, source) of the next replica for new broker
    `n`, by the same rank and the same early stop."""
    import numpy as np

    topics = run.topic_replicas
    topic_of = run.topic_row
    work = run.work
    rack = run.rack_list
    sign = 1 if count else -1
    held_rows, weights = held_by.rows, held_by.weights
    for src in sources.brokers():
        if not count and int(loads[src]) <= share:
            break  # never take a broker below its share
        lo, hi = held_by.span(src)
        gone = held_by.gone.get(src, ())
        # bytes: skip the partitions larger than the room left (they start at -size)
        i = lo if count else lo + int(np.searchsorted(weights[lo:hi], -room, side="left"))
        best: tuple[tuple[bool, int, int, bool, int], int] | None = None
        src_rack, n_rack = rack[src], rack[n]
        for start in range(i, hi, 16):  # a few at a time: a walk mostly stops early
            end = min(hi, start + 16)
            for row, weight in zip(
                held_rows[start:end].tolist(), weights[start:end].tolist(), strict=True
            ):
                if row in gone:
                    continue
                size = sign * weight
                if best is not None and not best[0][0] and weight != best[0][1]:
                    break  # past the size of the best candidate whose topic gets better
                reps = work[row].tolist()
                if n in reps:
                    continue
                others = [rack[b] for b in reps if b != src and b >= 0]  # run.rack_ok_one
                if src_rack not in others and n_rack in others:
                    continue
                if not run.fits_one(row, n):
                    continue
                if not count and not 0 < size <= room:
                    continue
                t = int(topic_of[row])
                on_src, on_n = int(topics[t, src]), int(topics[t, n])
                rank = (on_src <= on_n, weight, on_n - on_src, reps[0] == src, row)
                if best is None or rank < best[0]:
                    best = (rank, row)
            else:
                continue
            break  # the inner walk stopped early
        if best is not None:
            row = best[1]
            return row, work[row].tolist().index(src), src
    return None
