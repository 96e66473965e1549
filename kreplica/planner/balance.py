"""The exact topic balance for `balanced` when replicas are only added (RF raise, new partitions).

The greedy picks (pickers.pick_new_replica, pick_leader) are the fast path. When they leave a
topic's replica spread above the lowest the constraints allow, the new replicas are moved
between brokers by augmenting paths in the flow network below, until no more even placement
exists. Nothing else changes: existing replicas, the new partitions' leaders (pick_leader
already gives the lowest leader spread: fewest topic leaders first) and every partition's
number of new replicas stay as they are.

Flow network of one topic (units = the replicas this plan adds, "fixed" = every other replica):

    source -> partition p               capacity k_p (its units)
    p -> (p, rack r)                    [lo, hi] = the rack rule below
    (p, r) -> broker b                  1, for eligible b on rack r not fixed in p
    broker b -> sink                    [lo_b, hi_b] = the window: L <= count_b <= L + s

Rack rule (what the greedy picker does: fresh racks first): fresh(p) = racks of eligible
brokers that p's fixed replicas do not use. If k_p <= |fresh(p)| each unit goes to its own fresh
rack (fresh: [0, 1], others: [0, 0]); otherwise every fresh rack gets at least one unit
(fresh: [1, inf], others: [0, inf]).

A window (L, s) is feasible exactly when a flow saturating the source meets every broker's
bounds. Starting from the greedy assignment (a flow that meets every bound but the brokers'),
`_repair` sends units from brokers above hi_b to brokers below it, then from brokers above
lo_b to brokers below it, along shortest paths of the residual graph (breadth first, never
built: its edges are read off the assignment). When no such path exists the window is
infeasible (max-flow min-cut), so trying the windows by increasing s gives the lowest spread.

The usual case (every unit on a fresh rack of its own, no guard) needs no broker-level search:
a unit may then go to any broker of a rack it may use, so `_RackFit` solves the same window
over racks (a graph of a few nodes) and then hands each rack's units out within it. A million
partitions at 500 brokers spent most of their planning time in the broker-level search.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from kreplica.planner.evaluate import spread_floor, water_level

_BIG = 1 << 30

# residual-graph nodes: ("b", broker, 0), ("r", partition, rack), ("p", partition, 0)
_Node = tuple[str, int, int]


@dataclass
class TopicUnits:
    """One topic's assignment as the repair sees it.

    replicas: partition id -> replica list (mutated in place by the repair)
    fixed: partition id -> how many leading replicas stay where they are; the rest are units
    eligible: brokers units may go to; rack: broker -> rack key (any broker)
    scope: brokers whose topic count the spread measures (eligible ones included)
    order: the preference among brokers (lowest first) where paths tie
    admits: whether a unit of partition `pid` may go to broker `b` (a disk guard, say); with
    one that refuses, the result no longer claims the lowest spread
    """

    replicas: dict[int, list[int]]
    fixed: dict[int, int]
    eligible: Sequence[int]
    rack: Callable[[int], str]
    scope: Sequence[int]
    order: Callable[[int], tuple[int, ...]] = field(default=lambda b: (b,))
    admits: Callable[[int, int], bool] | None = None


@dataclass
class Result:
    spread_before: int
    spread_after: int
    optimal: bool  # no placement of the same units reaches a lower topic spread
    moved: int  # units placed elsewhere than the greedy pick


def spread_of(counts: Mapping[int, int]) -> int:
    return max(counts.values()) - min(counts.values()) if counts else 0


class _State:
    """The assignment with the indexes the residual graph is read from."""

    def __init__(self, units: TopicUnits) -> None:
        self.u = units
        self.rack_ids: dict[str, int] = {}
        for b in sorted(units.eligible):
            self.rack_ids.setdefault(units.rack(b), len(self.rack_ids))
        self.rack_of = {b: self.rack_ids[units.rack(b)] for b in units.eligible}
        by_rack: dict[int, list[int]] = {}
        for b in sorted(units.eligible, key=units.order):
            by_rack.setdefault(self.rack_of[b], []).append(b)
        self.rack_brokers = by_rack
        self.all_racks = sorted(by_rack)
        self.count: dict[int, int] = dict.fromkeys(units.scope, 0)
        self.base: dict[int, int] = dict.fromkeys(units.scope, 0)
        self.units_on: defaultdict[int, set[int]] = defaultdict(set)  # eligible brokers only
        self.members: dict[int, set[int]] = {}
        self.rack_units: dict[int, dict[int, int]] = {}
        self.fresh: dict[int, frozenset[int]] = {}
        self.spill: dict[int, bool] = {}  # more units than fresh racks
        eligible_racks = frozenset(by_rack)
        # partitions share few sets of fixed racks: each set's fresh racks are computed once
        fresh_of: dict[tuple[int, ...], frozenset[int]] = {}
        key_id = dict(self.rack_of)  # an eligible broker's rack id is its _rack_key_id
        count, base, rack_of, units_on = self.count, self.base, self.rack_of, self.units_on
        for pid in sorted(units.replicas):
            reps = units.replicas[pid]
            n_fixed = units.fixed.get(pid, len(reps))
            self.members[pid] = set(reps)
            fixed = reps[:n_fixed]
            for b in fixed:
                if b in count:
                    count[b] += 1
                    base[b] += 1
            if n_fixed >= len(reps):
                continue
            try:
                fixed_racks = tuple(map(key_id.__getitem__, fixed))
            except KeyError:  # a fixed replica on an ineligible broker
                for b in fixed:
                    key_id.setdefault(b, self._rack_key_id(b))
                fixed_racks = tuple(map(key_id.__getitem__, fixed))
            fresh = fresh_of.get(fixed_racks)
            if fresh is None:
                fresh = fresh_of[fixed_racks] = eligible_racks.difference(fixed_racks)
            self.fresh[pid] = fresh
            self.spill[pid] = len(reps) - n_fixed > len(fresh)
            per_rack: dict[int, int] = {}
            for b in reps[n_fixed:]:
                count[b] += 1
                units_on[b].add(pid)
                r = rack_of[b]
                per_rack[r] = per_rack.get(r, 0) + 1
            self.rack_units[pid] = per_rack
        self.refused = False  # `admits` turned a move down: optimality is not proven

    def _rack_key_id(self, broker: int) -> int:
        """The rack id of a fixed replica's rack (an ineligible broker may share a rack with
        eligible ones; a rack no eligible broker is on gets an id no eligible rack has)."""
        return self.rack_ids.get(self.u.rack(broker), -1 - broker)

    def rack_bounds(self, pid: int, rack: int) -> tuple[int, int]:
        fresh = rack in self.fresh[pid]
        if self.spill[pid]:
            return (1 if fresh else 0), _BIG
        return 0, (1 if fresh else 0)

    def valid(self) -> bool:
        """Every partition follows the rack rule and holds each broker once."""
        for pid, per_rack in self.rack_units.items():
            if len(self.members[pid]) != len(self.u.replicas[pid]):
                return False
            fresh = self.fresh[pid]
            if self.spill[pid]:  # rack_bounds: every fresh rack at least one unit
                if not fresh <= per_rack.keys():
                    return False
            elif not per_rack.keys() <= fresh or any(n > 1 for n in per_rack.values()):
                return False  # rack_bounds: a fresh rack one unit at most, any other none
        return True

    def path(
        self,
        sources: Sequence[int],
        is_target: Callable[[int], bool],
    ) -> list[_Node] | None:
        """A shortest residual path from a source broker (which gives up a unit) to a target
        broker (which takes one), as the node sequence; None when there is none."""
        parent: dict[_Node, _Node | None] = {}
        queue: deque[_Node] = deque()
        admits = self.u.admits
        # Brokers not reached yet, per rack, in preference order: each is taken off once, so a
        # rack node costs the brokers it reaches plus its partition's members, not the whole
        # rack (without a guard; a guard refuses per partition, so then every broker is asked).
        unreached = {r: dict.fromkeys(bs) for r, bs in self.rack_brokers.items()}
        for b in sources:
            node = ("b", b, 0)
            parent[node] = None
            queue.append(node)
            unreached[self.rack_of[b]].pop(b, None)
        while queue:
            node = queue.popleft()
            kind, a, r = node
            if kind == "b":
                for pid in sorted(self.units_on.get(a, ())):
                    nxt = ("r", pid, self.rack_of[a])
                    if nxt not in parent:
                        parent[nxt] = node
                        queue.append(nxt)
            elif kind == "r":
                members = self.members[a]
                if admits is None:
                    waiting = unreached[r]
                    reached = [b for b in waiting if b not in members]
                else:
                    reached = []
                    for b in self.rack_brokers[r]:
                        if b in members or ("b", b, 0) in parent:
                            continue
                        if not admits(b, a):
                            self.refused = True
                            continue
                        reached.append(b)
                for b in reached:
                    nxt = ("b", b, 0)
                    parent[nxt] = node
                    unreached[r].pop(b, None)
                    if is_target(b):
                        return _unwind(parent, nxt)
                    queue.append(nxt)
                up = ("p", a, 0)
                if up not in parent and self.rack_units[a].get(r, 0) > self.rack_bounds(a, r)[0]:
                    parent[up] = node
                    queue.append(up)
            else:
                per_rack = self.rack_units[a]
                for rack in self.all_racks:
                    nxt = ("r", a, rack)
                    if nxt not in parent and per_rack.get(rack, 0) < self.rack_bounds(a, rack)[1]:
                        parent[nxt] = node
                        queue.append(nxt)
        return None

    def augment(self, path: list[_Node]) -> None:
        """Apply a path: each broker -> rack node step takes a unit off that broker, each rack
        node -> broker step puts one there, in the position the partition freed."""
        holes: dict[int, list[int]] = {}
        for here, nxt in pairwise(path):
            if here[0] == "b" and nxt[0] == "r":
                b, pid = here[1], nxt[1]
                reps = self.u.replicas[pid]
                pos = reps.index(b)
                holes.setdefault(pid, []).append(pos)
                self.members[pid].discard(b)
                self.units_on[b].discard(pid)
                self.count[b] -= 1
                self._rack_add(pid, self.rack_of[b], -1)
            elif here[0] == "r" and nxt[0] == "b":
                pid, b = here[1], nxt[1]
                pos = min(holes[pid])
                holes[pid].remove(pos)
                self.u.replicas[pid][pos] = b
                self.members[pid].add(b)
                self.units_on[b].add(pid)
                self.count[b] += 1
                self._rack_add(pid, self.rack_of[b], +1)

    def _rack_add(self, pid: int, rack: int, delta: int) -> None:
        per_rack = self.rack_units[pid]
        per_rack[rack] = per_rack.get(rack, 0) + delta
        if not per_rack[rack]:
            del per_rack[rack]

    def fit(self, lo: Mapping[int, int], hi: Mapping[int, int]) -> bool:
        """Move units until every eligible broker's count is within [lo, hi]; False when no
        placement of the units does that (the state is then a valid assignment still)."""
        if self.u.admits is None and not any(self.spill.values()):
            return _RackFit(self, lo, hi).run()
        brokers = sorted(lo, key=self.u.order)
        count = self.count
        while True:
            over = [b for b in brokers if count[b] > hi[b]]
            if not over:
                break
            found = self.path(over, lambda b: count[b] < hi[b])
            if found is None:
                return False
            self.augment(found)
        while True:
            under = {b for b in brokers if count[b] < lo[b]}
            if not under:
                return True
            donors = [b for b in brokers if count[b] > lo[b]]
            found = self.path(donors, under.__contains__)
            if found is None:
                return False
            self.augment(found)


class _RackFit:
    """`fit` when every partition gives each of its units a fresh rack of its own (no spill)
    and no guard refuses a broker: a unit may then go to any broker of a rack the partition
    may use (its other replicas are on other racks), so the problem splits in two. First the
    racks: units move between racks along shortest paths of a graph with one node per rack
    (A -> B while some partition has a unit on A and may use B), until every rack's total is
    within the sum of its brokers' bounds; a rack that cannot get there proves the window
    infeasible, as a broker would. Then each rack hands its units out within it. The result
    is the one the broker-level search proves, found over racks instead of brokers."""

    def __init__(self, state: _State, lo: Mapping[int, int], hi: Mapping[int, int]) -> None:
        self.s = state
        self.lo, self.hi = lo, hi
        self.racks = state.all_racks
        rack_brokers = state.rack_brokers
        self.total = {r: sum(state.count[b] for b in rack_brokers[r]) for r in self.racks}
        self.rack_lo = {r: sum(lo[b] for b in rack_brokers[r]) for r in self.racks}
        self.rack_hi = {r: sum(hi[b] for b in rack_brokers[r]) for r in self.racks}
        # movable[a][b]: partitions with a unit on rack a that may move it to rack b (ordered)
        self.movable: dict[int, dict[int, dict[int, None]]] = {
            a: {b: {} for b in self.racks} for a in self.racks
        }
        for pid in sorted(state.rack_units):
            self._index(pid, add=True)

    def _index(self, pid: int, add: bool) -> None:
        on = self.s.rack_units[pid]
        free = sorted(self.s.fresh[pid] - on.keys())
        for a in on:
            row = self.movable[a]
            for b in free:
                if add:
                    row[b][pid] = None
                else:
                    row[b].pop(pid, None)

    def run(self) -> bool:
        s, lo, hi = self.s, self.lo, self.hi
        if any(s.base[b] > hi[b] or lo[b] > hi[b] for b in lo):
            return False  # fixed replicas alone break the window
        total, rack_lo, rack_hi = self.total, self.rack_lo, self.rack_hi
        while over := [r for r in self.racks if total[r] > rack_hi[r]]:
            if not self._augment(over, lambda r: total[r] < rack_hi[r]):
                return False
        while under := {r for r in self.racks if total[r] < rack_lo[r]}:
            donors = [r for r in self.racks if total[r] > rack_lo[r]]
            if not self._augment(donors, under.__contains__):
                return False
        for r in self.racks:
            self._within(s.rack_brokers[r])
        return True

    def _augment(self, sources: Sequence[int], is_target: Callable[[int], bool]) -> bool:
        """Move one unit along a shortest rack path from a source to a target; False: none."""
        parent: dict[int, int | None] = dict.fromkeys(sources)
        queue = deque(sources)
        end = None
        while queue and end is None:
            a = queue.popleft()
            for b in self.racks:
                if b not in parent and self.movable[a][b]:
                    parent[b] = a
                    if is_target(b):
                        end = b
                        break
                    queue.append(b)
        if end is None:
            return False
        hops: list[tuple[int, int]] = []
        node = end
        while (prev := parent[node]) is not None:
            hops.append((prev, node))
            node = prev
        for a, b in reversed(hops):
            pid = next(iter(self.movable[a][b]))
            here = self._unit_on(pid, a)
            self._move(pid, here, self._receiver(pid, b))
        return True

    def _unit_on(self, pid: int, rack: int) -> int:
        """The broker of `rack` holding the partition's unit there (one at most: no spill)."""
        reps = self.s.u.replicas[pid]
        n_fixed = self.s.u.fixed.get(pid, len(reps))
        return next(b for b in reps[n_fixed:] if self.s.rack_of[b] == rack)

    def _receiver(self, pid: int, rack: int) -> int:
        """The broker of `rack` a unit goes to: one below its floor, else one with room, else
        any; the preferred (least loaded) first."""
        s, lo, hi = self.s, self.lo, self.hi
        members = s.members[pid]
        candidates = [b for b in s.rack_brokers[rack] if b not in members]
        return min(
            candidates,
            key=lambda b: (s.count[b] >= lo[b], s.count[b] >= hi[b]),
        )

    def _move(self, pid: int, here: int, there: int) -> None:
        s = self.s
        self._index(pid, add=False)
        reps = s.u.replicas[pid]
        reps[reps.index(here)] = there
        s.members[pid].discard(here)
        s.members[pid].add(there)
        s.units_on[here].discard(pid)
        s.units_on[there].add(pid)
        s.count[here] -= 1
        s.count[there] += 1
        s._rack_add(pid, s.rack_of[here], -1)
        s._rack_add(pid, s.rack_of[there], +1)
        self.total[s.rack_of[here]] -= 1
        self.total[s.rack_of[there]] += 1
        self._index(pid, add=True)

    def _within(self, brokers: Sequence[int]) -> None:
        """Hand a rack's units out within it (its total is within its bounds): brokers above
        their ceiling give units away, then brokers below their floor take some."""
        s, lo, hi = self.s, self.lo, self.hi
        count = s.count
        for giver in brokers:
            while count[giver] > hi[giver]:
                self._shift(giver, [b for b in brokers if count[b] < hi[b]])
        for taker in brokers:
            while count[taker] < lo[taker]:
                givers = sorted(
                    (b for b in brokers if count[b] > lo[b]), key=lambda b: lo[b] - count[b]
                )
                self._shift(givers[0], [taker])

    def _shift(self, giver: int, takers: Sequence[int]) -> None:
        """Move one unit of `giver` to the first taker that does not hold its partition."""
        s = self.s
        order = sorted(takers, key=lambda b: (s.count[b] >= self.lo[b],))
        for pid in sorted(s.units_on[giver]):
            for b in order:
                if b not in s.members[pid]:
                    self._move(pid, giver, b)
                    return
        raise AssertionError("a rack's unit found no broker of its rack")


def _unwind(parent: Mapping[_Node, _Node | None], end: _Node) -> list[_Node]:
    path = [end]
    node = parent[end]
    while node is not None:
        path.append(node)
        node = parent[node]
    path.reverse()
    return path


def floor_of(base: Mapping[int, int], eligible: Sequence[int], added: int) -> int:
    """Water filling: the lowest spread any placement of `added` units on the eligible brokers
    reaches, ignoring per-partition rules (no placement does better)."""
    eligible_set = set(eligible)
    fixed = {b: n for b, n in base.items() if b not in eligible_set}
    if not eligible_set:
        return spread_of(base)
    return spread_floor(fixed, {b: base[b] for b in eligible}, added)


def _windows(
    base: Mapping[int, int], eligible: Sequence[int], added: int, s: int
) -> list[tuple[dict[int, int], dict[int, int]]]:
    """Every broker window (lo, hi) of spread s the counts might meet, highest level first:
    level L <= count <= L + s on every broker of the scope, eligible ones with `added` more."""
    eligible_set = set(eligible)
    fixed = [n for b, n in base.items() if b not in eligible_set]
    counts = sorted(base[b] for b in eligible)
    total = sum(counts) + added
    low_l = max(max(base.values()) - s, -(-total // len(counts)) - s, 0)
    high_l = min([*fixed, water_level(counts, added)])
    out = []
    for level in range(high_l, low_l - 1, -1):
        if fixed and max(fixed) > level + s:
            continue
        lo = {b: max(base[b], level) for b in eligible}  # bounds on the broker's count
        hi = dict.fromkeys(eligible, level + s)
        room = sum(hi.values()) - sum(base[b] for b in eligible)
        if sum(lo[b] - base[b] for b in eligible) <= added <= room:
            out.append((lo, hi))
    return out


def _counts(units: TopicUnits) -> tuple[dict[int, int], dict[int, int]]:
    """Topic replicas per scope broker: all of them, and the fixed ones only."""
    count = dict.fromkeys(units.scope, 0)
    base = dict.fromkeys(units.scope, 0)
    for pid, reps in units.replicas.items():
        n_fixed = units.fixed.get(pid, len(reps))
        for i, b in enumerate(reps):
            if b in count:
                count[b] += 1
                if i < n_fixed:
                    base[b] += 1
    return count, base


def lowest_bound(units: TopicUnits) -> int:
    """The water-filling floor of the topic's spread for these units (per-partition rules
    ignored): no placement of them goes lower."""
    count, base = _counts(units)
    added = sum(count.values()) - sum(base.values())
    return floor_of(base, sorted(units.eligible), added)


def balance_units(units: TopicUnits, target: int = 0) -> Result:
    """Move units (never fixed replicas) until the topic's spread over `units.scope` is the
    lowest any valid placement reaches, or at most `target` (0: the lowest)."""
    count, base = _counts(units)
    before = spread_of(count)
    eligible = sorted(units.eligible)
    added = sum(count.values()) - sum(base.values())
    if not added or not eligible:
        return Result(before, before, True, 0)
    floor = floor_of(base, eligible, added)
    if before <= max(floor, target):
        return Result(before, before, before <= floor, 0)
    state = _State(units)
    if not state.valid():
        return Result(before, before, False, 0)
    start = {pid: list(units.replicas[pid]) for pid in state.rack_units}
    for s in range(floor, before):
        for lo, hi in _windows(base, eligible, added, s):
            if state.fit(lo, hi):
                moved = sum(
                    1
                    for pid, reps in start.items()
                    for a, b in zip(reps, units.replicas[pid], strict=True)
                    if a != b
                )
                return Result(before, spread_of(state.count), not state.refused, moved)
    for pid, reps in start.items():  # no lower window is feasible: keep the greedy placement
        units.replicas[pid][:] = reps
    return Result(before, before, not state.refused, 0)
