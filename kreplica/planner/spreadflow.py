"""Exact balance for replicas that must go somewhere (a drain) and for preferred leaders.

Units come in groups of interchangeable partitions: the same topic and the same choices
(for a drain: the same units leaving and the same layers, so partitions with other staying
replicas share a group when their choices are the same; for leaders: the same candidates).
The network, one node per group, per (group, layer) or pool, per (topic, broker) fed by more
than one arc, per broker, and a sink:

    group g -> (g, layer l)    [n_g * lo_l, n_g * hi_l]  a layer is a rack a partition may use,
                                                          lo/hi units per partition
    (g, l) -> (topic, b)       n_g                        b on the layer (each partition once,
                                                          or g.caps[b])
    group g -> pool (t, l)     [n_g * lo_l, n_g]          a layer of hi 1 (no caps): a partition
    pool -> (topic, b)         unbounded                  gives it one unit at most, so the
                                                          groups of one topic share it
    (topic, b) -> b            convex: (topic base + y)^2
    b -> sink                  convex: W * (base + x)^2   W above any topic cost: brokers first

solved from a feasible start (improved first by single moves, `_improve`) by
`flow.Circulation`. A pool's units per broker go back to its groups in turn. The result is
split back into partitions round robin (`split`): each broker's units are consecutive and at
most n_g, so they land on distinct partitions; a layer holding >= n_g units gives every
partition one, <= n_g * hi at most hi to each.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from kreplica.planner.flow import Circulation

_BIG = 1 << 40


@dataclass
class Group:
    topic: str
    units: int  # per partition
    layers: list[tuple[int, int, list[int]]]  # (lo, hi, brokers) per partition
    members: list[tuple[str, int]] = field(default_factory=list)  # partitions
    start: dict[int, int] = field(default_factory=dict)  # broker -> units (a feasible start)
    caps: dict[int, int] | None = None  # broker -> units at most (default: one per partition)


R = TypeVar("R", bound=Hashable)


def rule_layers(
    rest: Collection[int], used: Collection[R], k: int, rack_brokers: Mapping[R, list[int]]
) -> list[tuple[int, int, list[int]]]:
    """The drain's rack rule as layers (lo, hi, brokers) per partition: k units on racks
    (`rack_brokers`, eligible brokers per rack) the staying replicas (`rest`, on racks
    `used`) do not use, one each; with fewer such racks than units, each of them gets one
    and the rest go anywhere (each broker once)."""
    fresh = [r for r in rack_brokers if r not in used]
    if k <= len(fresh):
        return [(0, 1, rack_brokers[r]) for r in fresh]
    layers = []
    for r, bs in rack_brokers.items():
        free = [b for b in bs if b not in rest]
        if free:
            layers.append((int(r in fresh), min(k, len(free)), free))
    return sorted(layers, key=lambda layer: -layer[0])


def _square(base: int, weight: int = 1) -> Callable[[int], int]:
    return lambda x: weight * (base + x) * (base + x)


class Layers:
    """Positions of brokers in layer lists, by the list's identity (the groups of a drain
    share their racks' lists), so a group's units on a layer are read from its start or
    result, not by a walk over every broker of the layer."""

    def __init__(self) -> None:
        self._of: dict[int, tuple[list[int], dict[int, int]]] = {}

    def position(self, layer: list[int]) -> dict[int, int]:
        hit = self._of.get(id(layer))
        if hit is None:  # the list is kept, so its id is not reused meanwhile
            hit = self._of[id(layer)] = (layer, {b: i for i, b in enumerate(layer)})
        return hit[1]

    def on(self, layer: list[int], units: Mapping[int, int]) -> list[tuple[int, int]]:
        """(broker, units) of `units` on the layer, in the layer's order."""
        if len(units) < len(layer) > 8:  # a rack's brokers: look up the few units instead
            pos = self.position(layer)
            hits = [(pos[b], b, x) for b, x in units.items() if x and b in pos]
            return [(b, x) for _, b, x in sorted(hits)]
        return [(b, x) for b in layer if (x := units.get(b, 0))]


Shared = Mapping[int, Mapping[int, int]]


def solve(
    groups: Sequence[Group],
    base: Mapping[int, int],
    topic_base: Mapping[str, Mapping[int, int]],
    shared: Shared | None = None,
) -> list[dict[int, int]]:
    """Per group, units per broker at the least cost (brokers' squares, then topics'),
    from the groups' starts (g.start). `shared`: per layer list (by identity), the units
    each of its brokers takes at most from all the groups of a topic naming that list
    (they share its pool: the bound is on the pool's arcs)."""
    shared = shared or {}
    _improve(groups, base, topic_base, shared)
    weight = _weight(groups, base, topic_base)
    return _Flow(groups, base, topic_base, weight, shared=shared).solved()


def _weight(
    groups: Sequence[Group], base: Mapping[int, int], topic_base: Mapping[str, Mapping[int, int]]
) -> int:
    """W: above every topic cost, so one unit of broker cost outweighs them all."""
    units_of: dict[str, int] = {}
    for g in groups:
        units_of[g.topic] = units_of.get(g.topic, 0) + g.units * len(g.members)
    return 1 + sum(
        len(base) * (max(topic_base.get(t, {}).values(), default=0) + n) ** 2
        for t, n in units_of.items()
    )


def solve_balanced(
    groups: Sequence[Group],
    base: Mapping[int, int],
    topic_base: Mapping[str, Mapping[int, int]],
) -> list[dict[int, int]]:
    """solve's optimum for groups without caps, their starts made here, in two steps.

    1. Replicas per broker. The squares of brokers' counts are strictly convex, so their
       least-cost counts are unique; groups with the same units and layers (whatever their
       topic) are one group for them: a few dozen, solved at once.
    2. Both costs (an integer optimum of the brokers' counts need not be unique: ties
       are the topics' to break), from the step-1 units dealt to the groups (partitions
       of different topics taking turns), on a network without the cells no optimum
       uses: a unit on broker b of a one-unit layer could move to any other broker a of
       the layer, so at an optimum base_b + 1 <= count_b <= count_a + 1 for every a
       there; the counts of optima differ by one at most (ties), so b with base_b above
       the layer's least step-1 count + 1 gets none.
    """
    assert all(g.caps is None for g in groups)
    starts = _broker_optimum(groups, base)
    after = dict(base)
    for g, start in zip(groups, starts, strict=True):
        g.start = start
        for b, x in start.items():
            after[b] += x
    layers = Layers()
    _spread_topics(groups, topic_base, layers)
    cells: set[tuple[str, int]] = set()
    open_of: dict[int, list[int]] = {}  # per layer (by identity: groups share them)
    for g in groups:
        for _, hi, layer in g.layers:
            if hi == 1:
                if id(layer) not in open_of:
                    low = min(after[b] for b in layer) + 1
                    open_of[id(layer)] = [b for b in layer if base[b] <= low]
                cells.update((g.topic, b) for b in open_of[id(layer)])
    weight = _weight(groups, base, topic_base)
    return _Flow(groups, base, topic_base, weight, cells, layers).solved()


def _spread_topics(
    groups: Sequence[Group], topic_base: Mapping[str, Mapping[int, int]], layers: Layers
) -> None:
    """The starts' units of each one-unit layer dealt again among its topics, each broker
    keeping its count: topics with the most units first, each unit to the broker where its
    topic has the fewest replicas (then the most units left to give): so the flow starts
    near the topics' optimum and has few cycles left to find."""
    # per layer (by identity): the units per broker and per topic it holds now
    held: dict[int, tuple[dict[int, int], dict[str, int]]] = {}
    for g in groups:
        for _, hi, layer in g.layers:
            if hi != 1:
                continue
            per_b, per_t = held.setdefault(id(layer), ({}, {}))
            for b, x in layers.on(layer, g.start):
                per_b[b] = per_b.get(b, 0) + x
                per_t[g.topic] = per_t.get(g.topic, 0) + x
    dealt: dict[tuple[int, str], list[int]] = {}
    for key, (per_b, per_t) in held.items():
        left = dict(per_b)
        for t in sorted(per_t, key=lambda t: (-per_t[t], t)):
            tb = topic_base.get(t, {})
            mine: dict[int, int] = {}
            units = []
            for _ in range(per_t[t]):
                b = min(
                    (b for b in left if left[b] > 0),
                    key=lambda b: (tb.get(b, 0) + mine.get(b, 0), -left[b], b),
                )
                left[b] -= 1
                mine[b] = mine.get(b, 0) + 1
                units.append(b)
            dealt[(key, t)] = units
    # handed back to the layer's groups of each topic in turn
    for g in groups:
        for _, hi, layer in g.layers:
            if hi != 1:
                continue
            units = dealt.get((id(layer), g.topic), [])
            x = 0
            for b, _ in layers.on(layer, g.start):
                x += g.start.pop(b)
            for b in units[:x]:
                g.start[b] = g.start.get(b, 0) + 1
            del units[:x]


def _broker_optimum(groups: Sequence[Group], base: Mapping[int, int]) -> list[dict[int, int]]:
    """Per group, a start at the least-cost replicas per broker."""
    merged: dict[tuple[object, ...], list[int]] = {}
    for gi, g in enumerate(groups):
        key = (g.units, tuple((lo, hi, tuple(bs)) for lo, hi, bs in g.layers))
        merged.setdefault(key, []).append(gi)
    patterns = []
    counts = dict(base)
    for gis in merged.values():
        first = groups[gis[0]]
        # members taking turns by topic: a broker's units, dealt in a row, reach topics apart
        turn: dict[str, int] = {}
        members = []
        for gi in gis:
            g = groups[gi]
            for _ in g.members:
                members.append((turn.get(g.topic, 0), g.topic, gi))
                turn[g.topic] = turn.get(g.topic, 0) + 1
        members.sort()
        p = Group("", first.units, first.layers, [(t, gi) for _, t, gi in members])
        p.start = _fill_start(p, counts)
        patterns.append(p)
    total = sum(base.values()) + sum(g.units * len(g.members) for g in groups)
    weight = 1 + len(base) * total * total  # above the pooled cells' squares
    per = _Flow(patterns, base, {}, weight).solved()
    starts: list[dict[int, int]] = [{} for _ in groups]
    for p, q in zip(patterns, per, strict=True):
        for (_, gi), dest in zip(p.members, split(p, q), strict=True):
            for b in dest:
                starts[gi][b] = starts[gi].get(b, 0) + 1
    return starts


def _fill_start(g: Group, counts: dict[int, int]) -> dict[int, int]:
    """A feasible start for a group: each layer its least units, the rest taking layers in
    turn up to their most, each layer's units to its least loaded brokers (n at most each);
    `counts` take them."""
    n = len(g.members)
    room = [n * min(hi, len(bs)) for _, hi, bs in g.layers]
    take = [n * lo for lo, _, _ in g.layers]
    left = n * g.units - sum(take)
    while left > 0:
        for i in range(len(take)):
            if left and take[i] < room[i]:
                take[i] += 1
                left -= 1
    start: dict[int, int] = {}
    for (_, _, bs), units in zip(g.layers, take, strict=True):
        heap = [(counts[b], b) for b in bs]
        heapq.heapify(heap)
        for _ in range(units):
            c, b = heapq.heappop(heap)
            start[b] = start.get(b, 0) + 1
            counts[b] = c + 1
            if start[b] < n:
                heapq.heappush(heap, (c + 1, b))
    return start


PoolKey = tuple[str, int]  # (topic, id of the layer list)


class _Flow:
    """The network of the module doc, built from the groups' starts and solved. `cells`:
    the (topic, broker) a pool may send to (None: all of its brokers; cells of other
    layers are always there)."""

    def __init__(
        self,
        groups: Sequence[Group],
        base: Mapping[int, int],
        topic_base: Mapping[str, Mapping[int, int]],
        weight: int,
        cells: set[tuple[str, int]] | None = None,
        layers: Layers | None = None,
        shared: Shared | None = None,
    ) -> None:
        layers = layers or Layers()
        net = self.net = Circulation()
        sink = net.node()
        source = net.node()
        brokers = sorted(base)
        self.node_b = node_b = {b: net.node() for b in brokers}
        # arcs into (topic, broker), made at the end: one alone goes straight to the broker
        # with the topic's cost, several meet at a node first
        tb_in: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
        arc_of: list[int] = []  # slot -> arc index
        self.arc_of = arc_of

        def to_tb(tail: int, t: str, b: int, cap: int, x: int) -> int:
            tb_in.setdefault((t, b), []).append((tail, cap, x, len(arc_of)))
            arc_of.append(-1)
            return len(arc_of) - 1

        # a layer of one unit per partition at most never gives a broker two units of one
        # partition: its groups of one topic share a pool node, one arc per broker (not per
        # group and broker), and the pool's units per broker are handed back to them after
        pools: dict[PoolKey, tuple[int, dict[int, int], list[int]]] = {}
        self.unit_arcs: list[list[tuple[int, int]]] = []
        self.pooled: list[list[tuple[int, PoolKey]]] = []
        for g in groups:
            n = len(g.members)
            gn = net.node()
            net.arc(source, gn, n * g.units, flow=n * g.units, lower=n * g.units)
            arcs = []
            into_pools = []
            for lo, hi, layer in g.layers:
                held = layers.on(layer, g.start)
                inflow = sum(x for _, x in held)
                if hi == 1 and g.caps is None:
                    pk = (g.topic, id(layer))
                    if pk not in pools:
                        pools[pk] = (net.node(), {}, layer)
                    node, pool_start, _ = pools[pk]
                    into_pools.append((net.arc(gn, node, n, flow=inflow, lower=n * lo), pk))
                    for b, x in held:
                        pool_start[b] = pool_start.get(b, 0) + x
                    continue
                ln = net.node()
                net.arc(gn, ln, n * hi, flow=inflow, lower=n * lo)
                for b in layer:
                    cap = n if g.caps is None else g.caps.get(b, n)
                    arcs.append((to_tb(ln, g.topic, b, cap, g.start.get(b, 0)), b))
            self.unit_arcs.append(arcs)
            self.pooled.append(into_pools)
        # a pool's brokers: all of its layer, or the cells allowed and those other layers use
        open_to: dict[str, dict[int, int]] | None = None
        if cells is not None:
            open_to = {}
            for t, b in (*cells, *tb_in):
                open_to.setdefault(t, {})[b] = 1
        self.pool_arcs: dict[PoolKey, list[tuple[int, int]]] = {}
        for pk, (node, start, layer) in pools.items():
            reach = layer if open_to is None else [b for b, _ in layers.on(layer, open_to[pk[0]])]
            bound = (shared or {}).get(pk[1], {})
            self.pool_arcs[pk] = [
                (to_tb(node, pk[0], b, bound.get(b, _BIG), start.get(b, 0)), b) for b in reach
            ]
        b_flow = dict.fromkeys(brokers, 0)
        for (t, b), entries in tb_in.items():
            cost = _square(topic_base.get(t, {}).get(b, 0))
            flow = sum(x for _, _, x, _ in entries)
            b_flow[b] += flow
            if len(entries) == 1:
                tail, cap, x, slot = entries[0]
                arc_of[slot] = net.arc(tail, node_b[b], cap, flow=x, cost=cost)
                continue
            node = net.node()
            for tail, cap, x, slot in entries:
                arc_of[slot] = net.arc(tail, node, cap, flow=x)
            net.arc(node, node_b[b], _BIG, flow=flow, cost=cost)
        self.cells = set(tb_in)
        total = 0
        for b in brokers:
            net.arc(node_b[b], sink, _BIG, flow=b_flow[b], cost=_square(base[b], weight))
            total += b_flow[b]
        net.arc(sink, source, total, flow=total, lower=total)

    def solved(self) -> list[dict[int, int]]:
        """Per group, units per broker at the least cost."""
        net, arc_of = self.net, self.arc_of
        net.cancel()
        # each pool's units, broker by broker in its order, handed to its groups in turn
        pool_units = {
            pk: iter([b for i, b in arcs for _ in range(net.arcs[arc_of[i]].flow)])
            for pk, arcs in self.pool_arcs.items()
        }
        out = []
        for arcs, into_pools in zip(self.unit_arcs, self.pooled, strict=True):
            per: dict[int, int] = {}
            for i, b in arcs:
                f = net.arcs[arc_of[i]].flow
                if f:
                    per[b] = per.get(b, 0) + f
            for i, pk in into_pools:
                for _ in range(net.arcs[i].flow):
                    b = next(pool_units[pk])
                    per[b] = per.get(b, 0) + 1
            out.append(per)
        return out


def _improve(
    groups: Sequence[Group],
    base: Mapping[int, int],
    topic_base: Mapping[str, Mapping[int, int]],
    shared: Shared,
) -> None:
    """The start improved by moving single units of a group between its brokers while that
    lowers the cost (brokers, then topics): the short cycles, found cheaply, so the
    circulation's searches are left the long ones."""
    counts = dict(base)
    # only the cells of the groups' brokers: topic_base may be large (every topic's brokers)
    tcounts: dict[tuple[str, int], int] = {}
    for g in groups:
        per = topic_base.get(g.topic, {})
        for _, _, bs in g.layers:
            for b in bs:
                if (g.topic, b) not in tcounts:
                    tcounts[(g.topic, b)] = per.get(b, 0)
    used: dict[tuple[str, int, int], int] = {}  # (topic, shared layer, broker) -> units
    for g in groups:
        for b, x in g.start.items():
            counts[b] += x
            tcounts[(g.topic, b)] += x
        for _, _, bs in g.layers:
            if id(bs) in shared:
                for b, x in g.start.items():
                    if b in shared[id(bs)]:
                        used[(g.topic, id(bs), b)] = used.get((g.topic, id(bs), b), 0) + x

    def free(g: Group, lb: int, b: int) -> bool:
        """Room on b in a shared layer, whichever group of the topic uses it."""
        sid = id(g.layers[lb][2])
        return sid not in shared or used.get((g.topic, sid, b), 0) < shared[sid].get(b, _BIG)

    def shift(g: Group, lb: int, b: int, x: int) -> None:
        sid = id(g.layers[lb][2])
        if sid in shared:
            used[(g.topic, sid, b)] = used.get((g.topic, sid, b), 0) + x

    for _ in range(len(groups) + 1):  # each pass lowers the cost; a bound for safety only
        moved = False
        for g in groups:
            n = len(g.members)
            t = g.topic
            layer_of = {b: i for i, (_, _, bs) in enumerate(g.layers) for b in bs}
            totals = [0] * len(g.layers)
            for b, x in g.start.items():
                totals[layer_of[b]] += x
            caps = dict.fromkeys(layer_of, n) if g.caps is None else g.caps
            for a in sorted(g.start):
                while g.start.get(a, 0) > 0:
                    la = layer_of[a]
                    leave = totals[la] - 1 >= n * g.layers[la][0]
                    room = [
                        b
                        for b, lb in layer_of.items()
                        if b != a
                        and g.start.get(b, 0) < caps.get(b, n)
                        and (lb == la or (leave and totals[lb] < n * g.layers[lb][1]))
                        and free(g, lb, b)
                    ]
                    if not room:
                        break
                    # a unit from a to b changes the squares by 2 (c_b - c_a + 1), brokers
                    # first: the least loaded b is the best move, if any lowers the cost
                    b = min(room, key=lambda b: (counts[b], tcounts.get((t, b), 0)))
                    broker_gain = counts[b] - counts[a] + 1
                    topic_gain = tcounts.get((t, b), 0) - tcounts[(t, a)] + 1
                    if (broker_gain, topic_gain) >= (0, 0):
                        break
                    g.start[a] -= 1
                    g.start[b] = g.start.get(b, 0) + 1
                    counts[a] -= 1
                    counts[b] += 1
                    tcounts[(t, a)] -= 1
                    tcounts[(t, b)] = tcounts.get((t, b), 0) + 1
                    totals[la] -= 1
                    totals[layer_of[b]] += 1
                    shift(g, la, a, -1)
                    shift(g, layer_of[b], b, 1)
                    moved = True
        if not moved:
            return


def split(
    group: Group, per_broker: Mapping[int, int], layers: Layers | None = None
) -> list[list[int]]:
    """The group's units handed to its partitions (members order), round robin: layers in
    order, each broker's units consecutive."""
    layers = layers or Layers()
    n = len(group.members)
    out: list[list[int]] = [[] for _ in range(n)]
    i = 0
    seen: set[int] = set()
    for _, _, layer in group.layers:
        for b, x in layers.on(layer, per_broker):
            if b in seen:
                continue
            seen.add(b)
            for _ in range(x):
                out[i % n].append(b)
                i += 1
    return out


# --- the drain's preferred leaders (either engine: drain.py, brokers/drain_arrays.py) ------


def flexible_leaders(
    g: Group,
    per: Mapping[int, int],
    sync: Sequence[int],
    load: Callable[[int], tuple[int, int, int]],
    take: Callable[[int], None],
) -> Group:
    """The leader group of a group placed only in counts (`per`: units per new broker, not
    yet which partition gets which): it leads from its in-sync staying replicas `sync` (each
    partition has them all) or from its new brokers, each as often as it sends units there.
    Its start is greedy: the least loaded candidate with room (`load`: (leaders, of the
    topic, rank); `take` counts the choice), on a tie the new replica (it takes the drained
    leader's place: the least change)."""
    n = len(g.members)
    caps = {**dict.fromkeys(sync, n), **per}
    start: dict[int, int] = {}
    for _ in g.members:
        lead = min(
            (b for b in caps if start.get(b, 0) < caps[b]),
            key=lambda b: (*load(b)[:2], b not in per, load(b)[2]),
        )
        start[lead] = start.get(lead, 0) + 1
        take(lead)
    return Group(g.topic, 1, [(0, 1, sorted(caps))], list(g.members), start, caps)


def paired_leaders(per: Mapping[int, int], lead_per: Mapping[int, int]) -> list[tuple[int, int]]:
    """A flexible group's (new broker, leader) per partition, from its units per broker and
    its leaders per broker: partitions led by a new broker b take b, the others the brokers
    left over and a staying leader each."""
    pairs = [(b, b) for b in sorted(per) for _ in range(lead_per.get(b, 0))]
    left = [b for b in sorted(per) for _ in range(per[b] - lead_per.get(b, 0))]
    leads = [r for r in sorted(lead_per) if r not in per for _ in range(lead_per[r])]
    return pairs + list(zip(left, leads, strict=True))


def kept_leaders(now: Sequence[int], lead_per: Mapping[int, int]) -> list[int]:
    """Partitions' leaders to match the counts per broker, each keeping its own (`now`)
    where the counts allow."""
    left = dict(lead_per)
    kept: list[int | None] = []
    for lead in now:
        keep = left.get(lead, 0) > 0
        kept.append(lead if keep else None)
        if keep:
            left[lead] -= 1
    spare = iter([b for b in sorted(left) for _ in range(left[b])])
    return [lead if lead is not None else next(spare) for lead in kept]
