"""The rebalance planner as it was at 6f36dc9 (a full scan per move), frozen: the oracle the
fast one must match plan for plan (test_broker_ops_oracle.py).

rebalance_plan: per-topic then cluster replica spread, then preferred leaders, within a
budget of moves or bytes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kreplica.errors import PlanInfeasible, UsageError
from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.planner.brokers.run import (
    Key,
    Run,
    bytes_on,
    counts_on,
    movable_keys,
    need_sizes,
    smallest_sizes,
)
from kreplica.planner.evaluate import spread
from kreplica.planner.options import PlanOptions
from kreplica.planner.report import LowerBound


def _excess_bound(counts: dict[int, int], after: dict[int, int]) -> int:
    """Fewest single-replica moves from `counts` to any layout at least as even as `after`:
    to spread <= 1 (the exact minimum, q+1 for the fullest) when `after` reaches it, else
    to bring the fullest down to `after`'s max and the emptiest up to its min."""
    if not counts:
        return 0
    values = sorted(counts.values(), reverse=True)
    if spread(after) <= 1:
        q, r = divmod(sum(values), len(values))
        return sum(max(0, c - (q + 1 if i < r else q)) for i, c in enumerate(values))
    top, bottom = max(after.values()), min(after.values())
    return max(sum(max(0, c - top) for c in values), sum(max(0, bottom - c) for c in values))


def rebalance_plan(
    snapshot: ClusterSnapshot,
    *,
    by: str = "count",
    max_moves: int | None = None,
    max_bytes: int | None = None,
    options: PlanOptions = PlanOptions(),
) -> Plan:
    """The fewest moves to per-topic replica spread <= 1 and cluster spread <= 1 (or, --by
    bytes, the most even bytes per broker), within the budget; then preferred-leader spread
    <= 1 per topic and cluster by reordering replicas (no data moves).

    1. per topic, while its spread > 1: a replica of the topic moves from a broker with the
       most of it to one with the fewest (rack kept): fullest-in-the-cluster source and
       emptiest destination first, smallest partition first
    2. count: while the cluster spread > 1, the same from the fullest to the emptiest broker,
       only in a topic the source holds more of than the destination (its spread stays <= 1)
       bytes: from the broker with the most bytes, the replica that best halves the gap to
       a broker with fewer bytes (strictly closer, so it ends)
    3. leaders: along a chain a -> ... -> b of partitions led by a with the next broker in
       sync in them (or added by this plan: in sync once the move completes), each
       partition's leader position goes to the next one, from a broker with the most
       preferred leaders to one with >= 2 fewer (per topic first, then cluster)
    """
    need_sizes(snapshot, by)
    for flag, value in (("`max_moves`", max_moves), ("`max_bytes`", max_bytes)):
        if value is not None and value < 0:
            raise UsageError(f"{flag} {value}: give 0 or more")
    live = snapshot.live_broker_ids()
    eligible = sorted(b for b in live if b not in options.exclude_brokers)
    if not eligible:
        raise PlanInfeasible("no eligible broker to rebalance over")
    run = Run.start(snapshot, eligible, options, None)
    ctx = run.ctx
    keys = movable_keys(run, run.in_flight(sorted(run.parts), options))
    counts_before = counts_on(run, eligible)
    bytes_before = bytes_on(run, eligible)
    topic_before = {
        t.name: {b: ctx.topic_replicas[t.name][b] for b in eligible} for t in run.topics
    }
    budget = _Budget(max_moves, max_bytes)
    by_topic: dict[str, list[Key]] = {}
    for k in keys:
        by_topic.setdefault(k[0], []).append(k)
    for topic in sorted(by_topic):
        _even_topic(run, topic, by_topic[topic], eligible, budget)
    if by == "count":
        _even_cluster_count(run, keys, eligible, budget)
    else:
        _even_cluster_bytes(run, keys, eligible, budget)
    reordered = _even_leaders(run, keys, eligible)
    # lower bound of the data moves for the evenness reached
    topic_lb = sum(
        _excess_bound(topic_before[t], {b: ctx.topic_replicas[t][b] for b in eligible})
        for t in topic_before
    )
    moves_lb = topic_lb
    sizes = [run.parts[k].size_bytes for k in keys]
    if by == "count":
        moves_lb = max(moves_lb, _excess_bound(counts_before, counts_on(run, eligible)))
        bytes_lb = smallest_sizes(sizes, moves_lb)
    else:
        after = bytes_on(run, eligible)
        top, bottom = max(after.values()), min(after.values())
        bytes_need = max(
            sum(max(0, v - top) for v in bytes_before.values()),
            sum(max(0, bottom - v) for v in bytes_before.values()),
        )
        biggest = max((s or 0 for s in sizes), default=0)
        moves_lb = max(moves_lb, -(-bytes_need // biggest) if biggest else 0)
        bytes_lb = max(bytes_need, smallest_sizes(sizes, moves_lb) or 0)
    run.bound = LowerBound(moves_lb, moves_lb, bytes_lb)
    if budget.exhausted:
        run.findings.append(
            Finding(
                "info",
                "budget-reached",
                f"stopped at the budget ({budget.text()}); the spread reached is the best "
                "these moves give, plan again for the rest",
            )
        )
    if reordered:
        run.findings.append(
            Finding(
                "info",
                "elect-after",
                f"{reordered} partition(s) only change their preferred leader (no data moves); "
                "a preferred leader election after the move (`kreplica elect PLAN.json`, run "
                "by `kreplica rebalance` after applying) makes it lead",
            )
        )
    return run.plan(
        "rebalance",
        {
            "by": by,
            "max_moves": max_moves,
            "max_bytes": max_bytes,
            "leaders_reordered": reordered,
            "lower_bound_moves": moves_lb,
            "broker_bytes_before": dict(sorted(bytes_before.items())),
            "broker_bytes_after": dict(sorted(bytes_on(run, eligible).items())),
        },
    )


@dataclass
class _Budget:
    moves: int | None
    bytes: int | None
    used_moves: int = 0
    used_bytes: int = 0
    exhausted: bool = False

    def fits(self, size: int) -> bool:
        ok = (self.moves is None or self.used_moves + 1 <= self.moves) and (
            self.bytes is None or self.used_bytes + size <= self.bytes
        )
        if not ok:
            self.exhausted = True
        return ok

    def spend(self, size: int) -> None:
        self.used_moves += 1
        self.used_bytes += size

    def text(self) -> str:
        parts = []
        if self.moves is not None:
            parts.append(f"--max-moves {self.moves}")
        if self.bytes is not None:
            parts.append(f"--max-bytes {self.bytes}")
        return ", ".join(parts)


def _find_move(
    run: Run,
    keys: Iterable[Key],
    src: int,
    dst: int,
    budget: _Budget,
    allowed: Callable[[Key], bool],
    rank: Callable[[Key], tuple[int, ...]],
) -> Key | None:
    best: tuple[tuple[int, ...], Key] | None = None
    for key in keys:
        reps = run.work[key]
        if src not in reps or dst in reps or not allowed(key) or not run.fits(key, dst):
            continue
        if not run.rack_ok(key, src, dst):
            continue
        if not budget.fits(run.parts[key].size_bytes or 0):
            continue
        gain = len(run.racks_of([b for b in reps if b != src] + [dst])) - len(run.racks_of(reps))
        r = (-gain, *rank(key), reps[0] == src)  # a move that repairs racks first
        if best is None or (r, key) < (best[0], best[1]):
            best = (r, key)
    return best[1] if best else None


def _apply_move(run: Run, key: Key, src: int, dst: int, budget: _Budget) -> None:
    budget.spend(run.parts[key].size_bytes or 0)
    run.move(key, src, dst)


def _even_counts(
    run: Run,
    keys: Sequence[Key],
    eligible: Sequence[int],
    budget: _Budget,
    counts: Mapping[int, int],
    secondary: Callable[[int], int],
    allowed_for: Callable[[int, int], Callable[[Key], bool]],
) -> None:
    """Move replicas from the fullest to the emptiest eligible brokers (by `counts`, ties by
    `secondary` then rank) until the spread is at most 1 or no allowed move is left."""
    ctx = run.ctx
    size = lambda k: (run.parts[k].size_bytes or 0,)  # noqa: E731
    while spread({b: counts[b] for b in eligible}) > 1:
        sources = sorted(eligible, key=lambda b: (-counts[b], -secondary(b), ctx.rank(b)))
        dests = sorted(eligible, key=lambda b: (counts[b], secondary(b), ctx.rank(b)))
        moved = False
        for src in sources:
            for dst in dests:
                if counts[src] - counts[dst] < 2:
                    break
                key = _find_move(run, keys, src, dst, budget, allowed_for(src, dst), size)
                if key is not None:
                    _apply_move(run, key, src, dst, budget)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def _even_topic(
    run: Run, topic: str, keys: Sequence[Key], eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx
    _even_counts(
        run,
        keys,
        eligible,
        budget,
        ctx.topic_replicas[topic],
        lambda b: ctx.cluster_replicas[b],
        lambda src, dst: lambda k: True,
    )


def _even_cluster_count(
    run: Run, keys: Sequence[Key], eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx

    def allowed_for(src: int, dst: int) -> Callable[[Key], bool]:
        return lambda k: ctx.topic_replicas[k[0]][src] > ctx.topic_replicas[k[0]][dst]

    _even_counts(run, keys, eligible, budget, ctx.cluster_replicas, lambda b: 0, allowed_for)


def _even_cluster_bytes(
    run: Run, keys: Sequence[Key], eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx
    cb = ctx.cluster_bytes
    for _ in range(10 * len(keys) + 10):
        src = max(eligible, key=lambda b: (cb[b], -ctx.rank(b)))
        best: tuple[int, Key, int] | None = None
        for dst in sorted(eligible, key=lambda b: (cb[b], ctx.rank(b))):
            gap = cb[src] - cb[dst]
            if gap <= 0:
                break

            def allowed(k: Key, src: int = src, dst: int = dst, gap: int = gap) -> bool:
                size = run.parts[k].size_bytes or 0
                topic = ctx.topic_replicas[k[0]]
                return 0 < size < gap and topic[src] > topic[dst]

            def rank(k: Key, gap: int = gap) -> tuple[int, ...]:
                return (abs(gap - 2 * (run.parts[k].size_bytes or 0)),)

            key = _find_move(run, keys, src, dst, budget, allowed, rank)
            if key is not None:
                score = abs(gap - 2 * (run.parts[key].size_bytes or 0)) - gap
                if best is None or score < best[0]:
                    best = (score, key, dst)
        if best is None:
            return
        _apply_move(run, best[1], src, best[2], budget)


def _even_leaders(run: Run, keys: Sequence[Key], eligible: Sequence[int]) -> int:
    """Reorder replicas so preferred leaders spread <= 1 per topic, then per cluster.
    Returns how many partitions only had their preferred leader changed."""
    ctx = run.ctx
    elig = set(eligible)

    def in_sync(key: Key) -> set[int]:
        """Who may lead after the move: replicas in sync now, and replicas this plan adds
        (the move completes only once they are in sync, and the election runs after it)."""
        part = run.parts[key]
        isr = set(part.in_sync)
        return {b for b in run.work[key] if b in elig and (b in isr or b not in part.replicas)}

    reorders: set[Key] = set()
    for topic in sorted({k[0] for k in keys}):
        mine = [k for k in keys if k[0] == topic]
        _leader_pass(run, mine, eligible, in_sync, lambda t, a, b: True, topic, reorders)
    tl = ctx.topic_leaders
    _leader_pass(
        run, list(keys), eligible, in_sync, lambda t, a, b: tl[t][a] > tl[t][b], None, reorders
    )
    moved_data = {k for k in reorders if set(run.work[k]) != set(run.parts[k].replicas)}
    return sum(1 for k in reorders - moved_data if tuple(run.work[k]) != run.parts[k].replicas)


def _leader_pass(
    run: Run,
    keys: Sequence[Key],
    eligible: Sequence[int],
    in_sync: Callable[[Key], set[int]],
    allowed: Callable[[str, int, int], bool],
    topic: str | None,
    reorders: set[Key],
) -> None:
    ctx = run.ctx

    def count(b: int) -> int:
        return ctx.topic_leaders[topic][b] if topic is not None else ctx.cluster_leaders[b]

    for _ in range(4 * len(keys) + 4):
        counts = {b: count(b) for b in eligible}
        if spread(counts) <= 1:
            return
        top = max(counts.values())
        path = None
        for start in sorted((b for b in eligible if counts[b] == top), key=ctx.rank):
            path = _leader_path(run, keys, start, top, counts, in_sync, allowed)
            if path:
                break
        if not path:
            return
        for key, new_leader in path:
            run.reorder(key, new_leader)
            reorders.add(key)


def _leader_path(
    run: Run,
    keys: Sequence[Key],
    start: int,
    top: int,
    counts: dict[int, int],
    in_sync: Callable[[Key], set[int]],
    allowed: Callable[[str, int, int], bool],
) -> list[tuple[Key, int]] | None:
    """BFS over 'a leads a partition where b is in sync': a shortest chain from `start` to a
    broker with at most top - 2 preferred leaders."""
    led: dict[int, list[Key]] = {}
    for k in keys:
        reps = run.work[k]
        if reps:
            led.setdefault(reps[0], []).append(k)
    came: dict[int, tuple[int, Key] | None] = {start: None}
    queue = [start]
    while queue:
        a = queue.pop(0)
        for key in led.get(a, []):
            for b in sorted(in_sync(key) - {a}, key=run.ctx.rank):
                if b in came or b not in counts or not allowed(key[0], a, b):
                    continue
                came[b] = (a, key)
                if counts[b] <= top - 2:
                    path: list[tuple[Key, int]] = []
                    node = b
                    while came[node] is not None:
                        prev, k = came[node]  # type: ignore[misc]
                        path.append((k, node))
                        node = prev
                    return list(reversed(path))
                queue.append(b)
    return None
