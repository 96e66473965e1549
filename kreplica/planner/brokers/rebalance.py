"""rebalance_plan: per-topic then cluster replica spread, then preferred leaders, within a
budget of moves or bytes."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kreplica.gcpause import gc_paused
from kreplica.model import ClusterSnapshot, Finding, Plan
from kreplica.planner.brokers.dispatch import pick_engine
from kreplica.planner.brokers.run import (
    bytes_on,
    counts_on,
    need_sizes,
    smallest_sizes,
    start_balancing,
)
from kreplica.planner.evaluate import spread
from kreplica.planner.loadindex import BrokerOrder, KeysByBroker
from kreplica.planner.options import PlanOptions
from kreplica.planner.plan import with_engine
from kreplica.planner.report import LowerBound

# The searches run on either run: run.Run (keys (topic name, partition)) or, on a snapshot
# in columns, row_run.RowRun (keys (topic index, row)); both sort in the same order.
BalancingRun = Any
Key = tuple[Any, int]


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


@gc_paused()  # a million partitions are acyclic objects: see kreplica/gcpause.py
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
    engine, why = pick_engine(snapshot, options, "rebalance")
    run: BalancingRun
    eligible: list[int]
    keys: list[Key]
    if engine == "columns":
        from kreplica.planner.brokers.row_run import start_balancing_rows

        run, eligible, keys = start_balancing_rows(snapshot, options, max_moves, max_bytes)
    else:
        run, eligible, keys = start_balancing(snapshot, options, max_moves, max_bytes)
    ctx = run.ctx
    counts_before = counts_on(run, eligible)
    bytes_before = bytes_on(run, eligible)
    topic_before = {
        t.name: {b: ctx.topic_replicas[t.name][b] for b in eligible} for t in run.topics
    }
    budget = _Budget(max_moves, max_bytes)
    by_topic: dict[Any, list[Key]] = {}
    for k in keys:
        by_topic.setdefault(k[0], []).append(k)
    for topic in sorted(by_topic):
        if budget.closed:
            break
        _even_topic(run, _Candidates(run, by_topic[topic]), topic, eligible, budget)
    if not budget.closed:
        candidates = _Candidates(run, keys)
        if by == "count":
            _even_cluster_count(run, candidates, eligible, budget)
        else:
            _even_cluster_bytes(run, candidates, len(keys), eligible, budget)
    reordered = _even_leaders(run, keys, eligible)
    # lower bound of the data moves for the evenness reached
    topic_lb = sum(
        _excess_bound(topic_before[t], {b: ctx.topic_replicas[t][b] for b in eligible})
        for t in topic_before
    )
    moves_lb = topic_lb
    sizes = [run.size_bytes(k) for k in keys]
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
    plan = run.plan(
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
    return with_engine(plan, engine, why)


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

    @property
    def closed(self) -> bool:
        """No move can fit any more, and a refused one already set `exhausted`: a search
        can only refuse again, so the passes stop (the same plan, without the searches)."""
        return self.exhausted and self.moves is not None and self.used_moves >= self.moves

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


class _Candidates:
    """The partitions a move may take from each broker, smallest first, then followers, then
    key (the count passes' preference), and apart those with two replicas on one rack: only
    they can gain a rack by a move, which comes before any size. A count pass's best move is
    then the best rack-gaining one, else the first allowed one in order; no full scan."""

    def __init__(self, run: BalancingRun, keys: Sequence[Key]) -> None:
        self.run = run
        size_bytes = run.size_bytes

        def size(k: Key) -> int:
            return size_bytes(k) or 0

        self.all = KeysByBroker(run.work, keys, size)
        self.short = {k for k in keys if self._short(k)}
        self.shorts = KeysByBroker(run.work, self.short, size)

    def _short(self, key: Key) -> bool:
        reps = self.run.work[key]
        rack = self.run.ctx.rack
        return len({rack(b) for b in reps}) < len(reps)

    def move(self, key: Key, src: int, dst: int) -> None:
        """After the move: the views follow."""
        self.all.move(key, src, dst)
        if key in self.short:
            self.shorts.move(key, src, dst)
            if not self._short(key):
                self.short.discard(key)
                self.shorts.drop(key, self.run.work[key])

    def smallest(
        self, src: int, dst: int, budget: _Budget, allowed: Callable[[Key], bool]
    ) -> Key | None:
        """_find_move(src's keys, rank=size), reading the rack-short ones and the front: the
        smallest size with an allowed partition, followers first, then key."""
        run = self.run
        best = _find_move(run, self.shorts.keys(src), src, dst, budget, allowed, _size(run))
        if best is not None and _gain(run, best, src, dst) > 0:
            return best
        size_bytes = run.size_bytes
        found: tuple[bool, Key] | None = None
        found_size = 0
        for key in self.all.keys(src):
            size = size_bytes(key) or 0
            if found is not None and size != found_size:
                break
            if not _movable(run, key, src, dst, allowed):
                continue
            if found is None:
                if not budget.fits(size):
                    return None  # the smallest fails the budget: so would any larger one
                if budget.bytes is not None and not budget.exhausted:
                    self.note_too_big(src, dst, budget, allowed)
                found_size = size
            candidate = (run.work[key][0] == src, key)
            if found is None or candidate < found:
                found = candidate
        return found[1] if found is not None else None

    def note_too_big(
        self,
        src: int,
        dst: int,
        budget: _Budget,
        allowed: Callable[[Key], bool],
        below: int | None = None,
    ) -> None:
        """The budget's `exhausted` as a full scan leaves it: set when the largest allowed
        partition (of a size in 1..below-1 when `below` is given) is over the bytes left."""
        run = self.run
        held = self.all.keys(src)
        end = len(held) if below is None else self.all.first_at(src, below)
        start = 0 if below is None else self.all.first_at(src, 1)
        for i in range(end - 1, start - 1, -1):
            if _movable(run, held[i], src, dst, allowed):
                budget.fits(run.size_bytes(held[i]) or 0)
                return

    def halving(
        self,
        src: int,
        dst: int,
        gap: int,
        budget: _Budget,
        allowed: Callable[[Key], bool],
        limit: int | None,
    ) -> Key | None:
        """_find_move(src's keys of a size in 1..gap-1, rank=|gap - 2 size|): the best
        rack-gaining one, else a walk out from half the gap, both ways, that stops after the
        nearest distance with an allowed partition that fits the budget, or at `limit` (a
        distance that could not beat the move the caller has)."""
        run = self.run
        size_bytes = run.size_bytes

        def size(k: Key) -> int:
            return size_bytes(k) or 0

        def sized(k: Key) -> bool:
            return 0 < size(k) < gap and allowed(k)

        def rank(k: Key) -> tuple[int, ...]:
            return (abs(gap - 2 * size(k)),)

        best_short = _find_move(run, self.shorts.keys(src), src, dst, budget, sized, rank)
        if best_short is not None and _gain(run, best_short, src, dst) > 0:
            return best_short
        held, at = self.all.keys(src), self.all.first_at
        low = at(src, 1)
        high = at(src, gap, low)
        up = at(src, -(-gap // 2), low, high)  # the first of 2 size >= gap
        down = up - 1
        best: tuple[int, bool, Key] | None = None
        while True:
            d_up = size(held[up]) * 2 - gap if up < high else None
            d_down = gap - size(held[down]) * 2 if down >= low else None
            if d_up is None and d_down is None:
                break
            if d_down is None or (d_up is not None and d_up <= d_down):
                distance, key = d_up, held[up]
                up += 1
            else:
                distance, key = d_down, held[down]
                down -= 1
            assert distance is not None
            if (best is not None and distance > best[0]) or (
                limit is not None and distance >= limit
            ):
                break
            if _movable(run, key, src, dst, allowed) and budget.fits(size(key)):
                found = (distance, run.work[key][0] == src, key)
                if best is None or found < best:
                    best = found
        return best[2] if best is not None else None


def _size(run: BalancingRun) -> Callable[[Key], tuple[int, ...]]:
    return lambda k: (run.size_bytes(k) or 0,)


def _movable(
    run: BalancingRun, key: Key, src: int, dst: int, allowed: Callable[[Key], bool]
) -> bool:
    """src's replica of the partition may go to dst (the budget aside)."""
    reps = run.work[key]
    if src not in reps or dst in reps or not allowed(key) or not run.fits(key, dst):
        return False
    return bool(run.rack_ok(key, src, dst))


def _gain(run: BalancingRun, key: Key, src: int, dst: int) -> int:
    """The racks the partition gains when src's replica goes to dst."""
    reps = run.work[key]
    return len(run.racks_of([b for b in reps if b != src] + [dst])) - len(run.racks_of(reps))


def _find_move(
    run: BalancingRun,
    keys: Iterable[Key],
    src: int,
    dst: int,
    budget: _Budget,
    allowed: Callable[[Key], bool],
    rank: Callable[[Key], tuple[int, ...]],
) -> Key | None:
    """The best-ranked allowed move of a replica from `src` to `dst` among `keys` (src's)."""
    best: tuple[tuple[int, ...], Key] | None = None
    for key in keys:
        if not _movable(run, key, src, dst, allowed):
            continue
        if not budget.fits(run.size_bytes(key) or 0):
            continue
        r = (-_gain(run, key, src, dst), *rank(key), run.work[key][0] == src)
        if best is None or (r, key) < (best[0], best[1]):  # a move that repairs racks first
            best = (r, key)
    return best[1] if best else None


def _apply_move(
    run: BalancingRun, candidates: _Candidates, key: Key, src: int, dst: int, budget: _Budget
) -> None:
    budget.spend(run.size_bytes(key) or 0)
    run.move(key, src, dst)
    candidates.move(key, src, dst)


def _even_counts(
    run: BalancingRun,
    candidates: _Candidates,
    eligible: Sequence[int],
    budget: _Budget,
    counts: Mapping[int, int],
    secondary: Callable[[int], int],
    allowed_for: Callable[[int, int], Callable[[Key], bool]],
) -> None:
    """Move replicas from the fullest to the emptiest eligible brokers (by `counts`, ties by
    `secondary` then rank) until the spread is at most 1 or no allowed move is left."""
    rank = run.ctx.rank
    sources = BrokerOrder(eligible, lambda b: (-counts[b], -secondary(b), rank(b)))
    dests = BrokerOrder(eligible, lambda b: (counts[b], secondary(b), rank(b)))
    while eligible and -sources.first()[0] - dests.first()[0] > 1:
        found: tuple[Key, int, int] | None = None
        for src in sources.brokers():
            for dst in dests.brokers():
                if counts[src] - counts[dst] < 2:
                    break
                key = candidates.smallest(src, dst, budget, allowed_for(src, dst))
                if key is not None:
                    found = (key, src, dst)
                    break
                if budget.closed:
                    return
            if found:
                break
        if found is None:
            return
        key, src, dst = found
        _apply_move(run, candidates, key, src, dst, budget)
        for order in (sources, dests):
            order.update(src)
            order.update(dst)


def _even_topic(
    run: BalancingRun, candidates: _Candidates, topic: str, eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx
    _even_counts(
        run,
        candidates,
        eligible,
        budget,
        ctx.topic_replicas[topic],
        lambda b: ctx.cluster_replicas[b],
        lambda src, dst: lambda k: True,
    )


def _even_cluster_count(
    run: BalancingRun, candidates: _Candidates, eligible: Sequence[int], budget: _Budget
) -> None:
    ctx = run.ctx

    def allowed_for(src: int, dst: int) -> Callable[[Key], bool]:
        return lambda k: ctx.topic_replicas[k[0]][src] > ctx.topic_replicas[k[0]][dst]

    _even_counts(run, candidates, eligible, budget, ctx.cluster_replicas, lambda b: 0, allowed_for)


def _even_cluster_bytes(
    run: BalancingRun,
    candidates: _Candidates,
    n_keys: int,
    eligible: Sequence[int],
    budget: _Budget,
) -> None:
    """From the broker with the most bytes, the move that best halves its gap to a broker
    with fewer: per destination (fewest bytes first) the best rack-gaining partition, else
    the one nearest half the gap; the destination whose move leaves the smallest gap wins.
    A destination with a smaller gap cannot do better than the best found, so the search
    stops there (score = |gap - 2 size| - gap >= -gap)."""
    ctx = run.ctx
    cb = ctx.cluster_bytes
    fullest = BrokerOrder(eligible, lambda b: (-cb[b], ctx.rank(b)))
    emptiest = BrokerOrder(eligible, lambda b: (cb[b], ctx.rank(b)))
    for _ in range(10 * n_keys + 10):
        if not eligible or budget.closed:
            return
        src = next(fullest.brokers())
        best: tuple[int, Key, int] | None = None
        for dst in emptiest.brokers():
            gap = cb[src] - cb[dst]
            if gap <= 0:
                break
            if budget.bytes is not None and not budget.exhausted:
                candidates.note_too_big(src, dst, budget, _fewer_of_topic(run, src, dst), gap)
            if best is not None and -gap >= best[0]:
                if budget.bytes is None or budget.exhausted:
                    break
                continue  # no better here; only the budget's flag is still read above
            limit = best[0] + gap if best is not None else None  # the score to beat
            key = candidates.halving(src, dst, gap, budget, _fewer_of_topic(run, src, dst), limit)
            if key is not None:
                score = abs(gap - 2 * (run.size_bytes(key) or 0)) - gap
                if best is None or score < best[0]:
                    best = (score, key, dst)
        if best is None:
            return
        _apply_move(run, candidates, best[1], src, best[2], budget)
        for order in (fullest, emptiest):
            order.update(src)
            order.update(best[2])


def _fewer_of_topic(run: BalancingRun, src: int, dst: int) -> Callable[[Key], bool]:
    """The destination holds fewer of the partition's topic (its spread stays <= 1)."""
    topics = run.ctx.topic_replicas
    return lambda k: topics[k[0]][src] > topics[k[0]][dst]


def _even_leaders(run: BalancingRun, keys: Sequence[Key], eligible: Sequence[int]) -> int:
    """Reorder replicas so preferred leaders spread <= 1 per topic, then per cluster.
    Returns how many partitions only had their preferred leader changed."""
    ctx = run.ctx
    in_sync = run.leader_candidates(eligible)
    reorders: set[Key] = set()
    by_topic: dict[str, list[Key]] = {}
    for k in keys:
        by_topic.setdefault(k[0], []).append(k)
    for topic in sorted(by_topic):
        _leader_pass(run, by_topic[topic], eligible, in_sync, None, topic, reorders)
    # the cluster pass: only to a broker leading fewer of the topic (its spread stays <= 1)
    _leader_pass(run, list(keys), eligible, in_sync, ctx.topic_leaders, None, reorders)
    moved_data = {k for k in reorders if set(run.work[k]) != set(run.parts[k].replicas)}
    return sum(1 for k in reorders - moved_data if tuple(run.work[k]) != run.parts[k].replicas)


def _leader_pass(
    run: BalancingRun,
    keys: Sequence[Key],
    eligible: Sequence[int],
    in_sync: Callable[[Key], Sequence[int]],
    fewer: Any,
    topic: Any | None,
    reorders: set[Key],
) -> None:
    """`fewer`: None, or preferred leaders per topic and broker: a partition's leadership
    then goes only to a broker that leads fewer of its topic than the one passing it."""
    ctx = run.ctx

    led = ctx.topic_leaders[topic] if topic is not None else ctx.cluster_leaders
    counts = {b: int(led[b]) for b in eligible}  # kept as the chains pass leadership
    edges: _LeadEdges | None = None  # built at the first search (most passes need none)
    for _ in range(4 * len(keys) + 4):
        if spread(counts) <= 1:
            return
        if edges is None:
            edges = _LeadEdges(run, keys, in_sync, set(eligible))
        top = max(counts.values())
        path = None
        dead_ends: set[int] = set()  # reach no broker low enough: nor does what they reach
        low = [b for b, n in counts.items() if n <= top - 2]  # where a chain may end
        for start in sorted((b for b in eligible if counts[b] == top), key=ctx.rank):
            if start in dead_ends:
                continue
            path = _leader_path(run, edges, start, low, fewer, dead_ends)
            if path:
                break
        if not path:
            return
        for key, new_leader in path:
            old = run.work[key][0]
            edges.move(key, old, new_leader)
            run.reorder(key, new_leader)
            reorders.add(key)
            counts[old] -= 1  # a chain runs over eligible brokers only
            counts[new_leader] += 1


class _LeadEdges:
    """'a leads a partition where b is in sync', per pair: for each broker a, per eligible
    broker b, the partitions of `keys` a is the preferred leader of with b in sync (key
    order). A pass keeps it current as it reorders: a search reads a broker's neighbours,
    not every replica of every partition it leads (a rebuild per chain, or a scan of the
    partitions per step, made the pass quadratic)."""

    def __init__(
        self,
        run: BalancingRun,
        keys: Sequence[Key],
        in_sync: Callable[[Key], Sequence[int]],
        eligible: set[int],
    ) -> None:
        self.in_sync = in_sync
        self.eligible = eligible
        self.of: dict[int, dict[int, list[Key]]] = {}
        for k in sorted(keys):  # appended in key order: each list stays sorted
            reps = run.work[k]
            if not reps:
                continue
            a = reps[0]
            edges = self.of.setdefault(a, {})
            for b in in_sync(k):
                if b != a and b in eligible:
                    held = edges.get(b)
                    if held is None:
                        edges[b] = [k]
                    else:
                        held.append(k)

    def passes(self, a: int, b: int, fewer: Any) -> Key | None:
        """The first partition a leads with b in sync that may pass its leadership to b:
        any (`fewer` None), or one whose topic a leads more of than b."""
        b_keys = self.of[a][b]
        if fewer is None:
            return b_keys[0] if b_keys else None
        for k in b_keys:
            of_topic = fewer[k[0]]
            if of_topic[a] > of_topic[b]:
                return k
        return None

    def move(self, key: Key, old: int, new: int) -> None:
        """The partition's preferred leader goes from `old` to `new`."""
        for b in self.in_sync(key):
            if b == old or b not in self.eligible:
                continue
            held = self.of[old][b]
            del held[bisect_left(held, key)]
        edges = self.of.setdefault(new, {})
        for b in self.in_sync(key):
            if b != new and b in self.eligible:
                insort(edges.setdefault(b, []), key)


def _leader_path(
    run: BalancingRun,
    edges: _LeadEdges,
    start: int,
    low: Sequence[int],
    fewer: Any,
    dead_ends: set[int],
) -> list[tuple[Key, int]] | None:
    """BFS over 'a leads a partition where b is in sync': a shortest chain from `start` to a
    `low` broker (top - 2 preferred leaders or fewer). None when there is none; then every
    broker the search reached joins `dead_ends` (what it reaches, `start` reaches).

    A broker's neighbours are met in the order a walk of its partitions (key order, each
    one's in-sync replicas by rank) meets them: by (first such partition, rank). The walk
    ends at the first low one met, so a broker's low neighbours are asked first: the least
    of them by that order is where the walk ends."""
    rank = run.ctx.rank
    eligible = edges.eligible
    came: dict[int, tuple[int, Key] | None] = {start: None}

    def first(a: int, b: int, b_keys: Sequence[Key]) -> tuple[Key, int, int] | None:
        """(the first partition that may pass a's leadership to b, b's rank, b)."""
        key = edges.passes(a, b, fewer)
        return None if key is None else (key, rank(b), b)

    level = [start]
    while level:
        # the walk ends at the first broker of the level, in BFS order, with a low
        # neighbour: the low ones never join `came`, so the level's expansions before it
        # do not change which one that is; the level is expanded only when none has one
        for a in level:
            near = edges.of.get(a, {})
            ends = [e for e in (first(a, b, near[b]) for b in low if b in near) if e]
            if ends:
                key, _, b = min(ends)
                came[b] = (a, key)
                path: list[tuple[Key, int]] = []
                node = b
                while came[node] is not None:
                    prev, k = came[node]  # type: ignore[misc]
                    path.append((k, node))
                    node = prev
                return list(reversed(path))
        following: list[int] = []
        for a in level:
            found = []
            for b, b_keys in edges.of.get(a, {}).items():
                if b in came or b not in eligible:
                    continue
                entry = first(a, b, b_keys)
                if entry is not None:
                    found.append(entry)
            found.sort()
            for key, _, b in found:
                came[b] = (a, key)
                following.append(b)
        level = following
    dead_ends.update(came)
    return None
